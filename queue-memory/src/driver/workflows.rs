//! The in-memory store's [`Workflows`](queue_core::engine::Workflows) implementation: their rows,
//! dependencies, and settling of waiting steps.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    StoredWorkflow, Target, WorkflowEdge, WorkflowInsert, WorkflowPrune, WorkflowPruneLock,
    WorkflowPruned, Workflows,
};
use queue_core::{DepPolicy, Dependency, Job, JobId, JobState, WorkflowId};

use crate::error::MemoryError;
use crate::faults::Statement;
use crate::store::MemoryTx;

use super::{before, blocker, cancelled, in_state, touch, workflow_members, MemoryDriver, Result};

#[async_trait]
impl Workflows for MemoryDriver {
    /// The workflow's row, created now; refused when its id exists.
    async fn workflow_insert(&self, tx: &mut MemoryTx, w: WorkflowInsert<'_>) -> Result<()> {
        let _call = self.enter(Statement::WorkflowInsert).await?;
        let now = self.store.now();
        tx.statement(|wr| {
            if wr.schema()?.workflows.contains_key(&w.id) {
                return Err(MemoryError::WorkflowExists(w.id));
            }
            wr.put_workflow(
                w.id,
                Some(StoredWorkflow {
                    id: w.id,
                    name: w.name.map(str::to_owned),
                    open: w.open,
                    callback: w.callback,
                    created_at: now,
                }),
            )
        })
    }

    /// One step row per `(job, step)`.
    async fn workflow_steps_insert(
        &self,
        tx: &mut MemoryTx,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<()> {
        let _call = self.enter(Statement::WorkflowStepsInsert).await?;
        tx.statement(|w| {
            for (job, step) in steps {
                w.put_workflow_job(workflow, *job, step)?;
            }
            Ok(())
        })
    }

    /// One dependency row per edge.
    async fn workflow_deps_insert(&self, tx: &mut MemoryTx, edges: &[WorkflowEdge]) -> Result<()> {
        let _call = self.enter(Statement::WorkflowDepsInsert).await?;
        tx.statement(|w| {
            for e in edges {
                w.put_dep(e.dep, e.job, e.policy)?;
            }
            Ok(())
        })
    }

    /// The workflow's row (the transaction holds the store, which is the lock).
    async fn workflow_lock(
        &self,
        tx: &mut MemoryTx,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>> {
        let _call = self.enter(Statement::WorkflowLock).await?;
        Ok(tx.tables().schema()?.workflows.get(&id).cloned())
    }

    /// An open workflow closed; rows changed.
    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64> {
        let _call = self.enter(Statement::WorkflowSeal).await?;
        self.pool(|w, _| {
            let Some(row) = w.schema()?.workflows.get(&id).filter(|r| r.open).cloned() else {
                return Ok(0);
            };
            w.put_workflow(id, Some(StoredWorkflow { open: false, ..row }))?;
            Ok(1)
        })
        .await
    }

    /// The waiting jobs that depend on any of `finished`, each once, in id order.
    async fn workflow_dependents(
        &self,
        target: Target<'_, MemoryTx>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>> {
        let _call = self.enter(Statement::WorkflowDependents).await?;
        self.read_on(target, |t, _| {
            let schema = t.schema()?;
            let mut out: Vec<JobId> = finished
                .iter()
                .flat_map(|dep| schema.dependents(*dep))
                .map(|(job, _)| job)
                .filter(|job| {
                    schema
                        .jobs
                        .get(*job)
                        .is_some_and(|r| r.state == JobState::Waiting)
                })
                .collect();
            out.sort();
            out.dedup();
            Ok(out)
        })
        .await
    }

    /// Each of `waiting` still waiting with a dependency of policy `Completed` that is dead,
    /// cancelled or deleted: cancelled now, `blocked_by` the least such dependency.
    async fn workflow_block(
        &self,
        target: Target<'_, MemoryTx>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>> {
        let _call = self.enter(Statement::WorkflowBlock).await?;
        self.on(target, |w, now| {
            let mut out = Vec::new();
            for id in waiting {
                let Some(row) = in_state(w, *id, &[JobState::Waiting])? else {
                    continue;
                };
                let Some(blocker) = blocker(w.schema()?, *id) else {
                    continue;
                };
                let mut row = cancelled(row, now);
                row.blocked_by = Some(blocker);
                w.update_job(row)?;
                out.push(*id);
            }
            Ok(out)
        })
        .await
    }

    /// Each of `waiting` still waiting whose every dependency is resolved (completed; or
    /// finished or deleted, for `AnyOutcome`), unless it is the callback of an open workflow:
    /// pending, due at the later of its run time and now.
    async fn workflow_promote(
        &self,
        target: Target<'_, MemoryTx>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>> {
        let _call = self.enter(Statement::WorkflowPromote).await?;
        self.on(target, |w, now| {
            let mut out = Vec::new();
            for id in waiting {
                let Some(mut row) = in_state(w, *id, &[JobState::Waiting])? else {
                    continue;
                };
                let schema = w.schema()?;
                let ready = schema.deps_of(*id).all(|(dep, policy)| {
                    schema
                        .jobs
                        .get(dep)
                        .map_or(policy == DepPolicy::AnyOutcome, |d| {
                            policy.resolved_by(d.state)
                        })
                });
                let held = row.workflow.is_some_and(|wf| {
                    schema
                        .workflows
                        .get(&wf)
                        .is_some_and(|r| r.open && r.callback == Some(*id))
                });
                if !ready || held {
                    continue;
                }
                row.state = JobState::Pending;
                row.run_at = row.run_at.max(now);
                touch(&mut row, now);
                out.push((*id, w.update_job(row)?.queue.clone()));
            }
            Ok(out)
        })
        .await
    }

    /// The cancelled jobs depending on one of `retried` and blocked by it: waiting again.
    async fn workflow_reopen(&self, tx: &mut MemoryTx, retried: &[JobId]) -> Result<Vec<JobId>> {
        let _call = self.enter(Statement::WorkflowReopen).await?;
        self.on(Target::Tx(tx), |w, now| {
            let candidates: Vec<JobId> = {
                let schema = w.schema()?;
                retried
                    .iter()
                    .flat_map(|dep| schema.dependents(*dep))
                    .map(|(job, _)| job)
                    .collect()
            };
            let mut out = Vec::new();
            for id in candidates {
                let Some(mut row) = in_state(w, id, &[JobState::Cancelled])? else {
                    continue;
                };
                if !row.blocked_by.is_some_and(|b| retried.contains(&b)) {
                    continue;
                }
                row.state = JobState::Waiting;
                row.blocked_by = None;
                row.finished_at = None;
                touch(&mut row, now);
                w.update_job(row)?;
                out.push(id);
            }
            Ok(out)
        })
        .await
    }

    /// Of `ids`, each with a dependency of policy `Completed` that is dead, cancelled or
    /// deleted, with the least such.
    async fn workflow_blocked(
        &self,
        tx: &mut MemoryTx,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>> {
        let _call = self.enter(Statement::WorkflowBlocked).await?;
        let schema = tx.tables().schema()?;
        Ok(ids
            .iter()
            .filter_map(|id| blocker(schema, *id).map(|dep| (*id, dep)))
            .collect())
    }

    /// Up to `limit` waiting jobs in id order, after `after`.
    async fn workflow_waiting(&self, after: Option<JobId>, limit: usize) -> Result<Vec<JobId>> {
        let _call = self.enter(Statement::WorkflowWaiting).await?;
        self.read(|t, _| Ok(t.schema()?.jobs.waiting_after(after).take(limit).collect()))
            .await
    }

    /// The workflow's row.
    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>> {
        let _call = self.enter(Statement::WorkflowGet).await?;
        self.read(|t, _| Ok(t.schema()?.workflows.get(&id).cloned()))
            .await
    }

    /// The workflow's jobs in id order, each with its step.
    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>> {
        let _call = self.enter(Statement::WorkflowJobs).await?;
        self.read(|t, _| {
            let schema = t.schema()?;
            Ok(workflow_members(schema, id)
                .filter_map(|(job, step)| {
                    schema.jobs.get(job).map(|row| Job {
                        step: Some(step.to_owned()),
                        ..row.job()
                    })
                })
                .collect())
        })
        .await
    }

    /// The dependencies of the workflow's jobs.
    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>> {
        let _call = self.enter(Statement::WorkflowEdges).await?;
        self.read(|t, _| {
            let schema = t.schema()?;
            Ok(workflow_members(schema, id)
                .flat_map(|(job, _)| {
                    schema
                        .deps_of(job)
                        .map(move |(dep, policy)| WorkflowEdge { job, dep, policy })
                })
                .collect())
        })
        .await
    }

    /// Up to `limit` workflows, newest first, below `before`, with their jobs per state.
    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>> {
        let _call = self.enter(Statement::WorkflowList).await?;
        self.read(|t, _| {
            let schema = t.schema()?;
            let rows = match before {
                Some(id) => schema.workflows.range(..id),
                None => schema.workflows.range(..),
            };
            Ok(rows
                .rev()
                .take(limit)
                .map(|(id, row)| {
                    let mut counts: BTreeMap<usize, (JobState, u64)> = BTreeMap::new();
                    for (job, _) in workflow_members(schema, *id) {
                        if let Some(r) = schema.jobs.get(job) {
                            let i = JobState::ALL
                                .iter()
                                .position(|s| *s == r.state)
                                .unwrap_or(0);
                            counts.entry(i).or_insert((r.state, 0)).1 += 1;
                        }
                    }
                    (row.clone(), counts.into_values().collect())
                })
                .collect())
        })
        .await
    }

    /// Up to `p.limit` workflows created before `now` less `p.older_than`, after `p.after`,
    /// in `(created_at, id)` order (the transaction holds the store, which is the lock).
    async fn workflow_prune_lock(
        &self,
        tx: &mut MemoryTx,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>> {
        let _call = self.enter(Statement::WorkflowPruneLock).await?;
        let bound = before(self.store.now(), p.older_than);
        let schema = tx.tables().schema()?;
        let mut rows: Vec<(DateTime<Utc>, WorkflowId)> = schema
            .workflows
            .values()
            .map(|w| (w.created_at, w.id))
            .filter(|key| key.0 < bound && p.after.is_none_or(|after| *key > after))
            .collect();
        rows.sort();
        Ok(rows
            .into_iter()
            .take(p.limit)
            .map(|(at, id)| (id, at))
            .collect())
    }

    /// Each workflow of `p.ids` whose every job is finished longer ago than its state's age:
    /// deleted, with its jobs, their step and dependency rows; how many, and their jobs.
    async fn workflow_prune(
        &self,
        tx: &mut MemoryTx,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned> {
        let _call = self.enter(Statement::WorkflowPrune).await?;
        let now = self.store.now();
        tx.statement(|w| {
            let doomed: Vec<(WorkflowId, Vec<JobId>)> = {
                let schema = w.schema()?;
                p.ids
                    .iter()
                    .filter(|id| schema.workflows.contains_key(id))
                    .filter(|id| {
                        workflow_members(schema, **id).all(|(job, _)| {
                            schema.jobs.get(job).is_none_or(|row| {
                                let age = p.age(row.state);
                                match (age, row.finished_at) {
                                    (Some(age), Some(at)) => at < before(now, age),
                                    _ => false,
                                }
                            })
                        })
                    })
                    .map(|id| {
                        (
                            *id,
                            workflow_members(schema, *id).map(|(job, _)| job).collect(),
                        )
                    })
                    .collect()
            };
            let mut done = WorkflowPruned::default();
            for (id, jobs) in &doomed {
                for job in jobs {
                    let deps: Vec<JobId> = w.schema()?.deps_of_ids(*job).collect();
                    for dep in deps {
                        w.delete_dep(dep, *job)?;
                    }
                    w.delete_workflow_job(*id, *job)?;
                    if w.delete_job(*job)? {
                        done.jobs += 1;
                    }
                }
                w.put_workflow(*id, None)?;
                done.workflows += 1;
            }
            Ok(done)
        })
    }

    /// What `id` depends on, in the dependencies' id order, each with its step, policy, state
    /// and output (`None` when its job is gone).
    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>> {
        let _call = self.enter(Statement::JobDeps).await?;
        self.read(|t, _| {
            let schema = t.schema()?;
            let workflow = schema.jobs.get(id).and_then(|r| r.workflow);
            Ok(schema
                .deps_of(id)
                .map(|(dep, policy)| {
                    let row = schema.jobs.get(dep);
                    Dependency {
                        id: dep,
                        step: workflow
                            .and_then(|w| schema.workflow_jobs.get(&(w, dep)).cloned())
                            .unwrap_or_default(),
                        policy,
                        state: row.map(|r| r.state),
                        output: row.and_then(|r| r.output.clone()),
                    }
                })
                .collect())
        })
        .await
    }
}
