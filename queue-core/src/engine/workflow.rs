//! Workflows: the insert of a workflow (all or none), open batches, and settling the jobs that
//! wait for others once those finish.
//!
//! Settling is decided by the database from committed states, never by a counter: after a
//! workflow job finishes (and that has committed), the engine finds the waiting jobs that
//! depend on it (`workflow_dependents`), cancels those a failed dependency blocks
//! (`workflow_block`, then the same for the jobs waiting on those) and makes pending those whose
//! every dependency is resolved (`workflow_promote`). Two dependencies finishing at once in two
//! processes each settle after their own commit: the later of the two sees both finished, and
//! the promotion, a change of a row still waiting, happens once. A process that dies between a
//! commit and its settling leaves jobs waiting that could go on; the sweep
//! ([`Engine::settle_waiting`], run by every worker's rescuer) settles them.

use std::collections::HashMap;

use super::{
    count_by, Driver, DriverFault, Engine, JobInsert, StoredWorkflow, Target, UniqueIndex,
    WorkflowEdge, WorkflowInsert, LOG_TARGET,
};
use crate::error::{Error, Result};
use crate::job::{JobId, JobState, NewJob, WorkflowSlot};
use crate::queue::validate_batch_at;
use crate::workflow::{
    count_states, DepPolicy, Dependency, PushedWorkflow, Workflow, WorkflowId, WorkflowInfo,
    WorkflowJob, WorkflowListRequest, WorkflowSummary,
};

/// Waiting jobs read per page by the sweep.
const SWEEP_PAGE: usize = 500;

/// A workflow made ready to insert: its jobs (each with its slot), step names and edges.
struct Prepared {
    id: WorkflowId,
    name: Option<String>,
    open: bool,
    callback: Option<JobId>,
    jobs: Vec<NewJob>,
    steps: Vec<String>,
    edges: Vec<WorkflowEdge>,
}

impl Prepared {
    fn of(wf: Workflow) -> Self {
        let ids: HashMap<String, JobId> = wf
            .steps
            .iter()
            .map(|s| (s.name.clone(), s.job.id()))
            .collect();
        let callback = wf.callback.as_ref().and_then(|c| ids.get(c).copied());
        let mut jobs = Vec::with_capacity(wf.steps.len());
        let mut steps = Vec::with_capacity(wf.steps.len());
        let mut edges = Vec::new();
        for step in wf.steps {
            let id = step.job.id();
            let held = wf.open && Some(id) == callback;
            for dep in &step.deps {
                edges.push(WorkflowEdge {
                    job: id,
                    dep: ids[dep.step()],
                    policy: dep.policy(),
                });
            }
            let mut job = step.job;
            job.workflow = Some(WorkflowSlot {
                workflow: wf.id,
                waiting: !step.deps.is_empty() || held,
            });
            jobs.push(job);
            steps.push(step.name);
        }
        Prepared {
            id: wf.id,
            name: wf.name,
            open: wf.open,
            callback,
            jobs,
            steps,
            edges,
        }
    }

    fn pushed(&self) -> PushedWorkflow {
        PushedWorkflow {
            id: self.id,
            jobs: self
                .steps
                .iter()
                .cloned()
                .zip(self.jobs.iter().map(NewJob::id))
                .collect(),
        }
    }
}

impl<D: Driver> Engine<D> {
    /// Stores a workflow, all or nothing, in one transaction.
    ///
    /// # Errors
    /// As [`Queue::push_workflow`](crate::Queue::push_workflow).
    #[tracing::instrument(name = "push_workflow", target = "queue::engine", level = "debug", skip_all, fields(workflow = %wf.id, steps = wf.steps.len()))]
    pub async fn push_workflow(&self, wf: Workflow) -> Result<PushedWorkflow> {
        wf.validate_at(self.limits(), self.driver().host_now())?;
        let p = self.prepare(wf);
        let notify = self.notify_queues(&p.jobs);
        let d = self.driver();
        let stored = self
            .retried("push_workflow", || async {
                let mut tx = d.tx_begin().await?;
                match self.insert_workflow(D::tx_conn(&mut tx), &p, &notify).await {
                    Ok(()) => d.tx_commit(tx).await,
                    Err(e) => {
                        let _ = d.tx_rollback(tx).await;
                        Err(e)
                    }
                }
            })
            .await;
        if let Err(e) = stored {
            return Err(self.workflow_insert_error(p.id, e).await);
        }
        self.count_pushed(&p.jobs, None);
        for (queue, n) in count_by(
            p.jobs
                .iter()
                .filter(|j| j.initial_state() == JobState::Pending)
                .map(NewJob::queue),
        ) {
            self.inner.hub.notify(queue, n);
        }
        Ok(p.pushed())
    }

    /// [`Engine::push_workflow`] inside the caller's transaction on `conn`: the workflow
    /// exists iff that commits.
    ///
    /// # Errors
    /// As [`Queue::push_workflow`](crate::Queue::push_workflow).
    pub async fn push_workflow_in(
        &self,
        conn: &mut D::Conn,
        wf: Workflow,
    ) -> Result<PushedWorkflow> {
        wf.validate_at(self.limits(), self.driver().host_now())?;
        let p = self.prepare(wf);
        let notify = self.notify_queues(&p.jobs);
        if let Err(e) = self.insert_workflow(conn, &p, &notify).await {
            return Err(self.workflow_insert_error(p.id, e).await);
        }
        self.count_pushed(&p.jobs, None);
        Ok(p.pushed())
    }

    fn prepare(&self, wf: Workflow) -> Prepared {
        let max_meta = self.limits().max_meta_bytes;
        let mut p = Prepared::of(wf);
        p.jobs = super::push::traced_all(std::mem::take(&mut p.jobs), max_meta);
        p
    }

    /// The queues to notify with the insert: those of the jobs pending at once.
    fn notify_queues(&self, jobs: &[NewJob]) -> Vec<String> {
        if self.inner.remote.is_none() {
            return Vec::new();
        }
        count_by(
            jobs.iter()
                .filter(|j| j.initial_state() == JobState::Pending)
                .map(NewJob::queue),
        )
        .into_iter()
        .map(|(q, _)| q.to_owned())
        .collect()
    }

    async fn insert_workflow(
        &self,
        conn: &mut D::Conn,
        p: &Prepared,
        notify: &[String],
    ) -> std::result::Result<(), D::Error> {
        let d = self.driver();
        d.workflow_insert(
            conn,
            WorkflowInsert {
                id: p.id,
                name: p.name.as_deref(),
                open: p.open,
                callback: p.callback,
            },
        )
        .await?;
        self.insert_members(conn, p.id, &p.jobs, &p.steps, &p.edges, notify)
            .await
    }

    /// The jobs of a workflow, their step rows and their dependencies, on `conn`.
    async fn insert_members(
        &self,
        conn: &mut D::Conn,
        workflow: WorkflowId,
        jobs: &[NewJob],
        steps: &[String],
        edges: &[WorkflowEdge],
        notify: &[String],
    ) -> std::result::Result<(), D::Error> {
        let d = self.driver();
        let now = d.host_now();
        let delays: Vec<_> = jobs.iter().map(|j| j.delay_from(now)).collect();
        let notify: Vec<&str> = notify.iter().map(String::as_str).collect();
        self.insert_all_or_none(
            Target::Tx(&mut *conn),
            JobInsert {
                jobs,
                delays: &delays,
                notify: &notify,
            },
        )
        .await?;
        let rows: Vec<(JobId, &str)> = jobs
            .iter()
            .map(NewJob::id)
            .zip(steps.iter().map(String::as_str))
            .collect();
        d.workflow_steps_insert(conn, workflow, &rows).await?;
        if !edges.is_empty() {
            d.workflow_deps_insert(conn, edges).await?;
        }
        Ok(())
    }

    /// The error of a failed workflow insert: a clash on the workflow's id is
    /// [`Error::WorkflowExists`].
    async fn workflow_insert_error(&self, id: WorkflowId, e: D::Error) -> Error {
        match self.driver().classify(&e) {
            DriverFault::UniqueViolation(UniqueIndex::WorkflowId) => {
                Error::WorkflowExists { workflow: id }
            }
            // A dialect that tells primary keys apart by table name only, or not at all.
            DriverFault::UniqueViolation(UniqueIndex::Unknown | UniqueIndex::JobId) => {
                match self.driver().workflow_get(id).await {
                    Ok(Some(_)) => Error::WorkflowExists { workflow: id },
                    _ => self.error(e),
                }
            }
            _ => self.error(e),
        }
    }

    /// Adds `jobs` to the open batch `id`: all of them or none; its callback then waits for
    /// them too.
    ///
    /// # Errors
    /// As [`Queue::batch_add`](crate::Queue::batch_add).
    pub async fn batch_add(&self, id: WorkflowId, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        let now = self.driver().host_now();
        validate_batch_at(&jobs, self.limits(), now)?;
        if jobs.is_empty() {
            return Err(Error::invalid("jobs", "a batch_add needs at least one job"));
        }
        for j in &jobs {
            if j.dedup_key_value().is_some() || j.unique_value().is_some() {
                return Err(Error::invalid(
                    "jobs",
                    "a job of a workflow cannot have a dedup key or a unique rule",
                ));
            }
        }
        let jobs = super::push::traced_all(jobs, self.limits().max_meta_bytes);
        let jobs: Vec<NewJob> = jobs
            .into_iter()
            .map(|mut j| {
                j.workflow = Some(WorkflowSlot {
                    workflow: id,
                    waiting: false,
                });
                j
            })
            .collect();
        let steps: Vec<String> = jobs.iter().map(|j| j.id().to_string()).collect();
        let notify = self.notify_queues(&jobs);
        let d = self.driver();
        let outcome = self
            .retried("batch_add", || async {
                let mut tx = d.tx_begin().await?;
                let r = self
                    .batch_add_in(D::tx_conn(&mut tx), id, &jobs, &steps, &notify)
                    .await;
                match r {
                    Ok(Ok(())) => d.tx_commit(tx).await.map(|()| Ok(())),
                    other => {
                        let _ = d.tx_rollback(tx).await;
                        other
                    }
                }
            })
            .await
            .map_err(|e| self.error(e))?;
        outcome?;
        self.count_pushed(&jobs, None);
        for (queue, n) in count_by(jobs.iter().map(NewJob::queue)) {
            self.inner.hub.notify(queue, n);
        }
        Ok(jobs.iter().map(NewJob::id).collect())
    }

    async fn batch_add_in(
        &self,
        conn: &mut D::Conn,
        id: WorkflowId,
        jobs: &[NewJob],
        steps: &[String],
        notify: &[String],
    ) -> std::result::Result<Result<()>, D::Error> {
        let d = self.driver();
        let row = d.workflow_lock(conn, id).await?;
        let callback = match row {
            None => return Ok(Err(Error::UnknownWorkflow { workflow: id })),
            Some(StoredWorkflow {
                open: true,
                callback: Some(cb),
                ..
            }) => cb,
            Some(_) => return Ok(Err(Error::WorkflowSealed { workflow: id })),
        };
        let edges: Vec<WorkflowEdge> = jobs
            .iter()
            .map(|j| WorkflowEdge {
                job: callback,
                dep: j.id(),
                policy: DepPolicy::AnyOutcome,
            })
            .collect();
        self.insert_members(conn, id, jobs, steps, &edges, notify)
            .await?;
        Ok(Ok(()))
    }

    /// Seals the open batch `id`: it takes no more jobs, and its callback runs once every
    /// member has finished (at once if they all have).
    ///
    /// # Errors
    /// As [`Queue::batch_seal`](crate::Queue::batch_seal).
    pub async fn batch_seal(&self, id: WorkflowId) -> Result<()> {
        let d = self.driver();
        let changed = self
            .retried("batch_seal", || d.workflow_seal(id))
            .await
            .map_err(|e| self.error(e))?;
        let row = d.workflow_get(id).await.map_err(|e| self.error(e))?;
        let Some(row) = row else {
            return Err(Error::UnknownWorkflow { workflow: id });
        };
        if changed == 0 {
            return Err(Error::WorkflowSealed { workflow: id });
        }
        if let Some(cb) = row.callback {
            self.settle_jobs(Target::Pool, &[cb])
                .await
                .map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    /// A workflow with its jobs and their dependencies.
    ///
    /// # Errors
    /// As [`Queue::workflow`](crate::Queue::workflow).
    pub async fn workflow(&self, id: WorkflowId) -> Result<Option<WorkflowInfo>> {
        let d = self.driver();
        let Some(row) = d.workflow_get(id).await.map_err(|e| self.error(e))? else {
            return Ok(None);
        };
        let jobs = d.workflow_jobs(id).await.map_err(|e| self.error(e))?;
        let edges = d.workflow_edges(id).await.map_err(|e| self.error(e))?;
        let mut deps: HashMap<JobId, Vec<(JobId, DepPolicy)>> = HashMap::new();
        for e in edges {
            deps.entry(e.job).or_default().push((e.dep, e.policy));
        }
        Ok(Some(WorkflowInfo {
            id: row.id,
            name: row.name,
            open: row.open,
            callback: row.callback,
            created_at: row.created_at,
            jobs: jobs
                .into_iter()
                .map(|job| WorkflowJob {
                    step: job.step.clone().unwrap_or_default(),
                    depends_on: deps.remove(&job.id).unwrap_or_default(),
                    job,
                })
                .collect(),
        }))
    }

    /// Workflows, newest first, with their jobs' counts per state.
    ///
    /// # Errors
    /// As [`Queue::workflows`](crate::Queue::workflows).
    pub async fn workflows(&self, req: WorkflowListRequest) -> Result<Vec<WorkflowSummary>> {
        if req.limit == 0 || req.limit > 1_000 {
            return Err(Error::invalid("limit", "must be 1 to 1000"));
        }
        let rows = self
            .driver()
            .workflow_list(req.before, req.limit)
            .await
            .map_err(|e| self.error(e))?;
        Ok(rows
            .into_iter()
            .map(|(w, counts)| WorkflowSummary {
                id: w.id,
                name: w.name,
                open: w.open,
                created_at: w.created_at,
                counts: count_states(
                    counts
                        .into_iter()
                        .flat_map(|(s, n)| std::iter::repeat_n(s, n as usize)),
                ),
            })
            .collect())
    }

    /// What job `id` depends on, with each dependency's state and output.
    ///
    /// # Errors
    /// As [`Queue::dependencies`](crate::Queue::dependencies).
    pub async fn dependencies(&self, id: JobId) -> Result<Vec<Dependency>> {
        self.driver().job_deps(id).await.map_err(|e| self.error(e))
    }

    /// Settles the jobs waiting for `finished`, jobs of workflows that finished in a
    /// transaction that has committed since (`complete_in_tx`).
    ///
    /// # Errors
    /// As [`Queue::settle_dependents`](crate::Queue::settle_dependents).
    pub async fn settle_dependents(&self, finished: &[JobId]) -> Result<()> {
        if finished.is_empty() {
            return Ok(());
        }
        self.settle(Target::Pool, finished.to_vec(), true)
            .await
            .map(drop)
            .map_err(|e| self.error(e))
    }

    /// Settles the jobs waiting for `finished` (jobs of workflows that have just completed,
    /// died or been cancelled, and committed): a failure here is logged, not returned, since
    /// the transition it follows has happened; the sweep settles what it left.
    pub(super) async fn settle_after(&self, finished: &[JobId], failed: bool) {
        if finished.is_empty() {
            return;
        }
        if let Err(e) = self.settle(Target::Pool, finished.to_vec(), failed).await {
            tracing::warn!(target: LOG_TARGET, error = %e, jobs = finished.len(), "could not settle the jobs waiting for finished workflow jobs; the sweep will");
        }
    }

    /// Settles the waiting jobs that depend on `finished`, then those waiting on the jobs
    /// this cancelled, until nothing more changes. `failed`: some of `finished` may be dead,
    /// cancelled or deleted (otherwise the first round only promotes). On the pool the
    /// promoted jobs' workers are woken; inside a transaction their queues are returned for
    /// the caller to wake once it has committed.
    pub(super) async fn settle(
        &self,
        mut target: Target<'_, D::Conn>,
        mut frontier: Vec<JobId>,
        mut failed: bool,
    ) -> std::result::Result<Vec<String>, D::Error> {
        let d = self.driver();
        let in_tx = target.is_tx();
        let mut promoted_queues = Vec::new();
        while !frontier.is_empty() {
            let waiting = d.workflow_dependents(target.reborrow(), &frontier).await?;
            if waiting.is_empty() {
                break;
            }
            let cancelled = if failed {
                d.workflow_block(target.reborrow(), &waiting).await?
            } else {
                Vec::new()
            };
            let promoted = d.workflow_promote(target.reborrow(), &waiting).await?;
            if in_tx {
                promoted_queues.extend(promoted.into_iter().map(|(_, q)| q));
            } else {
                self.wake_promoted(&promoted).await;
            }
            frontier = cancelled;
            failed = true;
        }
        Ok(promoted_queues)
    }

    /// Wakes the workers of the queues of `promoted` jobs.
    async fn wake_promoted(&self, promoted: &[(JobId, String)]) {
        for (queue, n) in count_by(promoted.iter().map(|(_, q)| q.as_str())) {
            self.wake(queue, n).await;
        }
    }

    /// Settles `jobs` themselves (waiting jobs whose dependencies may all be resolved, or one
    /// failed): cancels or promotes each, then settles what waits on those cancelled. The jobs
    /// changed, and (inside a transaction) the queues of those promoted, to wake after it.
    async fn settle_jobs(
        &self,
        mut target: Target<'_, D::Conn>,
        jobs: &[JobId],
    ) -> std::result::Result<(u64, Vec<String>), D::Error> {
        let d = self.driver();
        let cancelled = d.workflow_block(target.reborrow(), jobs).await?;
        let promoted = d.workflow_promote(target.reborrow(), jobs).await?;
        let n = (cancelled.len() + promoted.len()) as u64;
        let mut queues = Vec::new();
        if target.is_tx() {
            queues.extend(promoted.into_iter().map(|(_, q)| q));
        } else {
            self.wake_promoted(&promoted).await;
        }
        queues.extend(self.settle(target, cancelled, true).await?);
        Ok((n, queues))
    }

    /// Inside a retry's transaction, after `retried` (steps of workflows, now waiting) came
    /// back: promotes those whose dependencies allow it, makes the jobs their failure cancelled
    /// wait again (and, through them, the jobs those cancelled), and settles those. The queues
    /// of the jobs promoted, to wake once the transaction has committed.
    pub(super) async fn reopen_in(
        &self,
        conn: &mut D::Conn,
        retried: &[JobId],
    ) -> std::result::Result<Vec<String>, D::Error> {
        let d = self.driver();
        let mut queues: Vec<String> = d
            .workflow_promote(Target::Tx(&mut *conn), retried)
            .await?
            .into_iter()
            .map(|(_, q)| q)
            .collect();
        let mut reopened = Vec::new();
        let mut frontier = retried.to_vec();
        while !frontier.is_empty() {
            let next = d.workflow_reopen(conn, &frontier).await?;
            reopened.extend_from_slice(&next);
            frontier = next;
        }
        if !reopened.is_empty() {
            queues.extend(self.settle_jobs(Target::Tx(conn), &reopened).await?.1);
        }
        Ok(queues)
    }

    /// The sweep: settles every waiting job whose dependencies allow it (after a process died
    /// between a dependency's commit and its settling, or an operator's change raced one);
    /// the jobs promoted or cancelled.
    ///
    /// # Errors
    /// As [`Queue::settle_waiting`](crate::Queue::settle_waiting).
    pub async fn settle_waiting(&self) -> Result<u64> {
        let d = self.driver();
        let mut after = None;
        let mut changed = 0;
        loop {
            let page = self
                .retried("sweep", || d.workflow_waiting(after, SWEEP_PAGE))
                .await
                .map_err(|e| self.error(e))?;
            let Some(last) = page.last().copied() else {
                break;
            };
            changed += self
                .settle_jobs(Target::Pool, &page)
                .await
                .map_err(|e| self.error(e))?
                .0;
            if page.len() < SWEEP_PAGE {
                break;
            }
            after = Some(last);
        }
        if changed > 0 {
            tracing::info!(target: LOG_TARGET, settled = changed, "the sweep settled waiting workflow jobs");
        }
        Ok(changed)
    }
}
