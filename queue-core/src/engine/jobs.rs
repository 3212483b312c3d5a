//! Operating on jobs by id (cancel, retry, get) and the operators' calls (list, stats, prune).

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::maintenance::WorkflowAges;
use super::{count_by, Driver, DriverFault, Engine, JobPrune, JobReschedule, Target, PRUNE_CHUNK};
use crate::error::{Error, Result};
use crate::job::{Job, JobId, JobState, Reschedule};
use crate::queue::{ListRequest, PruneRequest, QueueStats};
use crate::validate;
use crate::workflow::WorkflowId;

/// What [`Engine::retry_ids`] did.
#[derive(Debug, Default)]
pub(super) struct Retried {
    /// Jobs that came back.
    pub(super) changed: u64,
    /// Steps left as they were, each with the dependency that failed (or was deleted).
    pub(super) blocked: Vec<(JobId, JobId)>,
    /// The queues of jobs made pending (once per job), to wake after the commit.
    pub(super) queues: Vec<String>,
}

impl<D: Driver> Engine<D> {
    /// The error for an id-addressed operation that matched no row in an allowed state.
    async fn state_error(&self, id: JobId, operation: &'static str) -> Error {
        match self.driver().job_state(Target::Pool, id).await {
            Ok(None) => Error::NotFound { job: id },
            Ok(Some(state)) => Error::InvalidState {
                job: id,
                state,
                operation,
            },
            Err(e) => self.error(e),
        }
    }

    /// Cancels a pending or running job.
    ///
    /// # Errors
    /// As [`Queue::cancel`](crate::Queue::cancel).
    pub async fn cancel(&self, id: JobId) -> Result<()> {
        let changed = self
            .retried("cancel", || self.driver().job_cancel(id))
            .await
            .map_err(|e| self.error(e))?;
        if changed == 0 {
            return Err(self.state_error(id, "cancel").await);
        }
        // The queue of the job, for its counter (an operator's call: one read more is cheap; a
        // job deleted meanwhile is counted under no queue).
        let job = self.get(id).await.ok().flatten();
        self.inner
            .metrics
            .cancelled(job.as_ref().map_or("", |j| j.queue.as_str()))
            .increment(1);
        if job.is_none_or(|j| j.workflow.is_some()) {
            self.settle_after(&[id], true).await;
        }
        // A worker running it learns of it now, not at its next heartbeat.
        self.wake(crate::wake::CANCEL_WAKE, 1).await;
        Ok(())
    }

    /// Brings a dead or cancelled job back: to pending, or, a step of a workflow whose
    /// dependencies have not all finished as it needs, to waiting.
    ///
    /// # Errors
    /// As [`Queue::retry`](crate::Queue::retry).
    pub async fn retry(&self, id: JobId) -> Result<()> {
        match self.retry_ids(&[id], true).await {
            Ok(done) => {
                if let Some((job, dependency)) = done.blocked.first().copied() {
                    let state = self
                        .driver()
                        .job_state(Target::Pool, dependency)
                        .await
                        .map_err(|e| self.error(e))?;
                    return Err(Error::DependencyFailed {
                        job,
                        dependency,
                        state,
                    });
                }
                if done.changed == 0 {
                    return Err(self.state_error(id, "retry").await);
                }
                self.wake_retried(&done).await;
                Ok(())
            }
            Err(e) if matches!(self.driver().classify(&e), DriverFault::UniqueViolation(_)) => {
                if let Some(taken) = self.unique_taken(id).await {
                    return Err(taken);
                }
                match self.get(id).await {
                    Ok(Some(job)) if job.dedup_key.is_some() => Err(Error::Duplicate {
                        queue: job.queue,
                        dedup_key: job.dedup_key.unwrap_or_default(),
                    }),
                    _ => Err(self.error(e)),
                }
            }
            Err(e) => Err(self.error(e)),
        }
    }

    /// Retries `ids` (one job when `single`, else a bulk operation's batch) in one transaction:
    /// the workflows of those that are steps of one are locked first (so that retention, which
    /// takes the same locks, never deletes a workflow a retry is reviving), the steps whose
    /// dependency of policy `Completed` is dead, cancelled or deleted are left as they are
    /// (`blocked`: a retry would wait for it in vain), the others come back (steps waiting, the
    /// rest pending), the steps promoted where their dependencies allow, and the jobs their
    /// failure cancelled reopened and settled, all before the commit: a retry that fails
    /// halfway changes nothing, and one that commits leaves nothing stuck. Nothing is woken:
    /// the caller wakes `queues` after the commit.
    pub(super) async fn retry_ids(
        &self,
        ids: &[JobId],
        single: bool,
    ) -> std::result::Result<Retried, D::Error> {
        let d = self.driver();
        let workflows = self.retried("retry", || d.job_workflows(ids)).await?;
        self.retried("retry", || async {
            let mut tx = d.tx_begin().await?;
            let conn = D::tx_conn(&mut tx);
            match self.retry_in(conn, ids, &workflows, single).await {
                Ok(done) if done.blocked.is_empty() || !single => {
                    d.tx_commit(tx).await?;
                    Ok(done)
                }
                Ok(done) => {
                    d.tx_rollback(tx).await?;
                    Ok(done)
                }
                Err(e) => {
                    let _ = d.tx_rollback(tx).await;
                    Err(e)
                }
            }
        })
        .await
    }

    async fn retry_in(
        &self,
        conn: &mut D::Conn,
        ids: &[JobId],
        workflows: &[WorkflowId],
        single: bool,
    ) -> std::result::Result<Retried, D::Error> {
        let d = self.driver();
        let mut done = Retried::default();
        if !workflows.is_empty() {
            for w in workflows {
                d.workflow_lock(conn, *w).await?;
            }
            done.blocked = d.workflow_blocked(conn, ids).await?;
            if single && !done.blocked.is_empty() {
                return Ok(done);
            }
        }
        let todo: Vec<JobId> = ids
            .iter()
            .copied()
            .filter(|id| !done.blocked.iter().any(|(b, _)| b == id))
            .collect();
        if todo.is_empty() {
            return Ok(done);
        }
        if single {
            if let Some(queue) = d.job_retry(conn, todo[0]).await? {
                done.changed = 1;
                // A step comes back waiting: its queue is woken only if it is promoted.
                if workflows.is_empty() {
                    done.queues.push(queue);
                }
            }
        } else {
            done.changed = d.job_retry_many(conn, &todo).await?;
        }
        if done.changed > 0 && !workflows.is_empty() {
            let promoted = self.reopen_in(conn, &todo).await?;
            done.queues.extend(promoted);
        }
        Ok(done)
    }

    /// Wakes the workers of what a retry made pending.
    pub(super) async fn wake_retried(&self, done: &Retried) {
        for (queue, n) in count_by(done.queues.iter().map(String::as_str)) {
            self.wake(queue, n).await;
        }
    }

    /// Changes a pending job's run time or priority.
    ///
    /// # Errors
    /// As [`Queue::reschedule`](crate::Queue::reschedule).
    pub async fn reschedule(&self, id: JobId, change: Reschedule) -> Result<()> {
        change.validate_at(self.driver().host_now())?;
        let p = JobReschedule {
            id,
            delay: change.delay_from(self.driver().host_now()),
            priority: change.priority,
        };
        match self
            .retried("reschedule", || self.driver().job_reschedule(p))
            .await
            .map_err(|e| self.error(e))?
        {
            Some(queue) => {
                if p.delay == Some(Duration::ZERO) {
                    self.wake(&queue, 1).await;
                }
                Ok(())
            }
            None => Err(self.state_error(id, "reschedule").await),
        }
    }

    /// Reads one job.
    ///
    /// # Errors
    /// As [`Queue::get`](crate::Queue::get).
    pub async fn get(&self, id: JobId) -> Result<Option<Job>> {
        let mut job = self.driver().job_get(id).await.map_err(|e| self.error(e))?;
        if let Some(j) = job.as_mut().filter(|j| j.workflow.is_some()) {
            j.depends_on = self.dependencies(id).await?;
        }
        Ok(job)
    }

    /// Lists jobs, newest first.
    ///
    /// # Errors
    /// As [`Queue::list`](crate::Queue::list).
    pub async fn list(&self, req: ListRequest) -> Result<Vec<Job>> {
        req.validate()?;
        self.driver()
            .job_list(&req)
            .await
            .map_err(|e| self.error(e))
    }

    /// Job counts per queue and state.
    ///
    /// # Errors
    /// As [`Queue::stats`](crate::Queue::stats).
    pub async fn stats(&self, queue: Option<&str>) -> Result<Vec<QueueStats>> {
        if let Some(q) = queue {
            validate::queue_name(q)?;
        }
        let cap = self.limits().stats_count_cap;
        let mut stats = self
            .driver()
            .job_stats(queue, cap)
            .await
            .map_err(|e| self.error(e))?;
        if let (Some(q), true) = (queue, stats.is_empty()) {
            stats.push(QueueStats {
                queue: q.to_owned(),
                ..QueueStats::default()
            });
        }
        let mut stats = self.with_controls(queue, stats).await?;
        for s in &mut stats {
            s.count_cap = cap;
        }
        // In the order of the names' bytes on every backend, whatever a database's collation.
        stats.sort_by(|a, b| a.queue.cmp(&b.queue));
        Ok(stats)
    }

    /// Deletes finished jobs, a bounded number per statement.
    ///
    /// # Errors
    /// As [`Queue::prune`](crate::Queue::prune).
    pub async fn prune(&self, req: PruneRequest) -> Result<u64> {
        req.validate()?;
        let mut states: Vec<JobState> = Vec::with_capacity(3);
        for s in &req.states {
            if !states.contains(s) {
                states.push(*s);
            }
        }
        let p = JobPrune {
            states: &states,
            older_than: req.older_than,
            queue: req.queue.as_deref(),
            limit: PRUNE_CHUNK,
            retention: false,
        };
        // Whole workflows first (their jobs go together, every one matching), and only when
        // every queue is pruned: a workflow may span queues.
        let mut total = 0;
        if req.queue.is_none() {
            total += self
                .prune_workflows(WorkflowAges::uniform(&states, req.older_than), None)
                .await?
                .1;
        }
        loop {
            let n = self
                .retried("prune", || self.driver().job_prune(p))
                .await
                .map_err(|e| self.error(e))?;
            total += n;
            if n < PRUNE_CHUNK as u64 {
                return Ok(total);
            }
        }
    }

    /// Waits for a wake-up on `queue` or for `timeout`.
    pub async fn wait_for_work(&self, queue: &str, timeout: Duration) {
        self.inner.driver.watch(queue, &self.inner.hub);
        self.inner.hub.wait(queue, timeout).await;
    }

    /// The database's clock.
    ///
    /// # Errors
    /// As [`Queue::now`](crate::Queue::now).
    pub async fn now(&self) -> Result<DateTime<Utc>> {
        self.driver().now().await.map_err(|e| self.error(e))
    }
}
