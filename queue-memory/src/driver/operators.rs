//! The in-memory store's [`Operators`](queue_core::engine::Operators) implementation: reading,
//! listing, cancelling, retrying and deleting jobs, by id and in bulk.

use async_trait::async_trait;
use queue_core::engine::{JobMatch, JobReschedule, Operators};
use queue_core::{DepPolicy, Job, JobId, JobState, ListRequest, QueueStats, WorkflowId};

use crate::faults::Statement;
use crate::jobs::JobRow;
use crate::store::MemoryTx;

use super::{
    after, cancelled, in_state, matches, matching, retried, touch, update_each, MemoryDriver,
    Result, LIVE,
};

#[async_trait]
impl Operators for MemoryDriver {
    /// A pending or running job to cancelled, finished `now`, its lease token kept (so that
    /// its holder learns of it) and its expiry cleared; rows changed.
    async fn job_cancel(&self, id: JobId) -> Result<u64> {
        let _call = self.enter(Statement::JobCancel).await?;
        self.pool(|w, now| {
            let Some(row) = in_state(w, id, &LIVE)? else {
                return Ok(0);
            };
            w.update_job(cancelled(row, now))?;
            Ok(1)
        })
        .await
    }

    /// A dead or cancelled job back to pending (a step of a workflow: to waiting), due `now`,
    /// attempts and snoozes reset (its history kept); its queue. Refused when its dedup key is
    /// held by a live job, or its unique key by a job in its states.
    async fn job_retry(&self, tx: &mut MemoryTx, id: JobId) -> Result<Option<String>> {
        let _call = self.enter(Statement::JobRetry).await?;
        let now = self.store.now();
        tx.statement(|w| {
            let Some(row) = in_state(w, id, &[JobState::Dead, JobState::Cancelled])? else {
                return Ok(None);
            };
            Ok(Some(w.update_job(retried(row, now))?.queue.clone()))
        })
    }

    /// A pending job's run time (`now` plus `p.delay`) and priority, each when given; its
    /// queue.
    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>> {
        let _call = self.enter(Statement::JobReschedule).await?;
        self.pool(|w, now| {
            let Some(mut row) = in_state(w, p.id, &[JobState::Pending])? else {
                return Ok(None);
            };
            if let Some(delay) = p.delay {
                row.run_at = after(now, delay, "a job's run time")?;
            }
            if let Some(priority) = p.priority {
                row.priority = priority;
            }
            touch(&mut row, now);
            Ok(Some(w.update_job(row)?.queue.clone()))
        })
        .await
    }

    /// One job, with its history and output.
    async fn job_get(&self, id: JobId) -> Result<Option<Job>> {
        let _call = self.enter(Statement::JobGet).await?;
        self.read(|t, _| {
            let schema = t.schema()?;
            Ok(schema.jobs.get(id).map(|row| Job {
                step: row
                    .workflow
                    .and_then(|w| schema.workflow_jobs.get(&(w, id)).cloned()),
                ..row.job_detail()
            }))
        })
        .await
    }

    /// Jobs newest first (by id), below `req.before`, filtered by queue, state and kind; without
    /// their history and output (which `job_get` reads).
    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>> {
        let _call = self.enter(Statement::JobList).await?;
        self.read(|t, _| {
            Ok(t.schema()?
                .jobs
                .newest_first(req.before)
                .filter(|row| {
                    req.queue.as_deref().is_none_or(|q| row.queue == q)
                        && req.state.is_none_or(|s| row.state == s)
                        && req
                            .kind
                            .as_deref()
                            .is_none_or(|k| row.kind.as_deref() == Some(k))
                })
                .take(req.limit)
                .map(JobRow::job)
                .collect())
        })
        .await
    }

    /// Counts per queue with jobs, by name: pending jobs due at `now` (available) and later
    /// (scheduled), running jobs, and finished ones per state up to `cap` each; and the
    /// `run_at` of the available job due the longest. The counts of each queue and state are
    /// kept with every write, so no finished job is read to count.
    async fn job_stats(&self, queue: Option<&str>, cap: Option<u64>) -> Result<Vec<QueueStats>> {
        let _call = self.enter(Statement::JobStats).await?;
        self.read(|t, now| {
            let jobs = &t.schema()?.jobs;
            let capped = |n: u64| cap.map_or(n, |c| n.min(c));
            let stats = |name: &str, q: &crate::jobs::QueueJobs| {
                let (available, scheduled) = q.pending_counts(now);
                QueueStats {
                    queue: name.to_owned(),
                    waiting: q.count(JobState::Waiting),
                    available,
                    scheduled,
                    running: q.count(JobState::Running),
                    oldest_due: q.oldest_due(now),
                    completed: capped(q.count(JobState::Completed)),
                    dead: capped(q.count(JobState::Dead)),
                    cancelled: capped(q.count(JobState::Cancelled)),
                    ..QueueStats::default()
                }
            };
            Ok(match queue {
                Some(name) => jobs
                    .queue(name)
                    .map(|q| stats(name, q))
                    .into_iter()
                    .collect(),
                None => jobs.queues().map(|(name, q)| stats(name, q)).collect(),
            })
        })
        .await
    }

    /// The ids and queues of up to `m.limit` jobs that `m` matches, newest first, below
    /// `m.before`.
    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>> {
        let _call = self.enter(Statement::JobIds).await?;
        self.read(|t, now| {
            Ok(matching(t, m, now, m.before)?
                .take(m.limit)
                .map(|row| (row.id, row.queue.clone()))
                .collect())
        })
        .await
    }

    /// How many jobs `m` matches.
    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobCount).await?;
        self.read(|t, now| Ok(matching(t, m, now, None)?.count() as u64))
            .await
    }

    /// `job_cancel` of each listed job that is pending or running; rows changed.
    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64> {
        let _call = self.enter(Statement::JobCancelMany).await?;
        self.pool(|w, now| update_each(w, ids, &LIVE, |row| cancelled(row, now)))
            .await
    }

    /// `job_retry` of each listed job that is dead or cancelled, as one statement: a key that
    /// refuses one of them refuses them all; rows changed.
    async fn job_retry_many(&self, tx: &mut MemoryTx, ids: &[JobId]) -> Result<u64> {
        let _call = self.enter(Statement::JobRetryMany).await?;
        let now = self.store.now();
        tx.statement(|w| {
            update_each(w, ids, &[JobState::Dead, JobState::Cancelled], |row| {
                retried(row, now)
            })
        })
    }

    /// The workflows of the listed jobs, each once, in id order.
    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>> {
        let _call = self.enter(Statement::JobWorkflows).await?;
        self.read(|t, _| {
            let jobs = &t.schema()?.jobs;
            let mut out: Vec<WorkflowId> = ids
                .iter()
                .filter_map(|id| jobs.get(*id).and_then(|r| r.workflow))
                .collect();
            out.sort();
            out.dedup();
            Ok(out)
        })
        .await
    }

    /// How many waiting jobs have a dependency of policy `Completed` among the jobs `m`
    /// matches, read from the waiting jobs.
    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobDependentsCount).await?;
        self.read(|t, now| {
            let schema = t.schema()?;
            let mut n = 0;
            for job in schema.jobs.waiting_after(None) {
                let needs_a_match = schema.deps_of(job).any(|(dep, policy)| {
                    policy == DepPolicy::Completed
                        && schema.jobs.get(dep).is_some_and(|d| matches(m, d, now))
                });
                if needs_a_match {
                    n += 1;
                }
            }
            Ok(n)
        })
        .await
    }

    /// Deletes each listed job whose state is one of `states` (never a running one); rows
    /// deleted.
    async fn job_delete_many(&self, ids: &[JobId], states: &[JobState]) -> Result<u64> {
        let _call = self.enter(Statement::JobDeleteMany).await?;
        self.pool(|w, _| {
            let mut done = 0;
            for id in ids {
                let doomed = w.schema()?.jobs.get(*id).is_some_and(|row| {
                    states.contains(&row.state) && row.state != JobState::Running
                });
                if doomed && w.delete_job(*id)? {
                    done += 1;
                }
            }
            Ok(done)
        })
        .await
    }
}
