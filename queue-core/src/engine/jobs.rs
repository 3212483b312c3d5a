//! Operating on jobs by id (cancel, retry, get) and the operators' calls (list, stats, prune).

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{Driver, DriverFault, Engine, JobPrune, JobReschedule, Target, PRUNE_CHUNK};
use crate::error::{Error, Result};
use crate::job::{Job, JobId, JobState, Reschedule};
use crate::queue::{ListRequest, PruneRequest, QueueStats};
use crate::validate;

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
        Ok(())
    }

    /// Brings a dead or cancelled job back to pending.
    ///
    /// # Errors
    /// As [`Queue::retry`](crate::Queue::retry).
    pub async fn retry(&self, id: JobId) -> Result<()> {
        match self.retried("retry", || self.driver().job_retry(id)).await {
            Ok(Some(queue)) => {
                self.wake(&queue, 1).await;
                self.reopen_after_retry(&[id]).await;
                Ok(())
            }
            Ok(None) => Err(self.state_error(id, "retry").await),
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
        };
        let mut total = 0;
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
