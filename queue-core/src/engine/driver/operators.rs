//! [`Operators`]: what an operator does to jobs by id or by filter: read, list, count, cancel,
//! retry, reschedule, delete.

use std::time::Duration;

use async_trait::async_trait;

use crate::job::{Job, JobId, JobState};
use crate::queue::{ListRequest, QueueStats};
use crate::workflow::WorkflowId;

use super::Lifecycle;

/// `job_reschedule`: a pending job's run time and priority; what is `None` is kept.
#[derive(Clone, Copy, Debug)]
pub struct JobReschedule {
    /// The job.
    pub id: JobId,
    /// Due this long after the database's now.
    pub delay: Option<Duration>,
    /// The new priority.
    pub priority: Option<i32>,
}

/// `job_ids` / `job_count`: the jobs a bulk operation matches.
#[derive(Clone, Copy, Debug)]
pub struct JobMatch<'a> {
    /// Only this queue.
    pub queue: Option<&'a str>,
    /// Only these states (at least one, no repeats).
    pub states: &'a [JobState],
    /// Only this kind.
    pub kind: Option<&'a str>,
    /// Only jobs created longer ago than this, by the database's clock.
    pub older_than: Option<Duration>,
    /// `job_ids` only: only ids below this one (the next page, newest first).
    pub before: Option<JobId>,
    /// `job_ids` only: most rows.
    pub limit: usize,
}

/// What an operator does to jobs, by id or by filter: read, list, count, cancel, retry,
/// reschedule and delete.
#[async_trait]
pub trait Operators: Lifecycle {
    /// `job_cancel`: a pending or running job to cancelled, keeping its lease token so the
    /// holder learns of it; rows changed.
    async fn job_cancel(&self, id: JobId) -> Result<u64, Self::Error>;

    /// `job_retry`: in a transaction of the engine's, a dead or cancelled job back: a job
    /// outside workflows to pending, due now; a step of a workflow to waiting (the engine then
    /// settles it in the same transaction: pending once its dependencies allow). Attempts and
    /// snoozes reset, its error history kept, `blocked_by` and `finished_at` cleared. Its
    /// queue, or `None` when no dead or cancelled job has this id.
    async fn job_retry(
        &self,
        conn: &mut Self::Conn,
        id: JobId,
    ) -> Result<Option<String>, Self::Error>;

    /// `job_reschedule`: see [`JobReschedule`]; the job's queue when a pending job was changed,
    /// `None` when no pending job has this id.
    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>, Self::Error>;

    /// `job_get`: one job.
    async fn job_get(&self, id: JobId) -> Result<Option<Job>, Self::Error>;

    /// `job_list`: jobs newest first (by id), filtered as asked (queue, state, kind, cursor).
    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>, Self::Error>;

    /// `job_stats`: counts per queue and state, the queues in any order (the engine sorts
    /// them by name). Completed, dead and
    /// cancelled jobs are counted up to `cap` per queue and state (exactly when `None`), so
    /// that the statement need not read every finished row.
    async fn job_stats(
        &self,
        queue: Option<&str>,
        cap: Option<u64>,
    ) -> Result<Vec<QueueStats>, Self::Error>;

    /// `job_ids`: the ids and queues of up to `m.limit` jobs that `m` matches, newest first
    /// (by id), below `m.before` when given.
    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>, Self::Error>;

    /// `job_count`: how many jobs `m` matches (`before` and `limit` ignored).
    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64, Self::Error>;

    /// `job_cancel_many`: as `job_cancel`, for each of `ids` that is pending or running; rows
    /// changed.
    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64, Self::Error>;

    /// `job_retry_many`: as `job_retry`, for each of `ids` that is dead or cancelled, in one
    /// statement (which fails as a whole on a unique violation); rows changed.
    async fn job_retry_many(
        &self,
        conn: &mut Self::Conn,
        ids: &[JobId],
    ) -> Result<u64, Self::Error>;

    /// `job_workflows`: the workflows the jobs of `ids` are steps of, each once, in id order
    /// (a job's workflow never changes, so this reads without locks).
    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>, Self::Error>;

    /// `job_dependents_count`: how many waiting jobs have a dependency of policy `Completed`
    /// among the jobs `m` matches (`before` and `limit` ignored): the jobs a cancel or delete
    /// of those would cancel first. Read from the waiting jobs' side (their index), so it
    /// costs little where few jobs wait.
    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64, Self::Error>;

    /// `job_delete_many`: deletes each of `ids` whose state is one of `states`; rows deleted.
    async fn job_delete_many(&self, ids: &[JobId], states: &[JobState])
        -> Result<u64, Self::Error>;
}
