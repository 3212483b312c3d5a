//! [`Maintenance`]: the background work of a queue: rescuing expired leases, retention, and the
//! lease that keeps one process doing it at a time.

use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;

use crate::job::{JobId, JobState};

use super::Lifecycle;

/// A running job whose lease has expired, read by `job_expired`.
#[derive(Clone, Debug)]
pub struct Expired {
    /// The job.
    pub id: JobId,
    /// The lease token it still carries (fences the rescue).
    pub token: Uuid,
    /// Its queue (for wake-ups).
    pub queue: String,
    /// Attempts counted so far.
    pub attempts: u32,
    /// Its attempt budget.
    pub max_attempts: u32,
}

/// `job_rescue`: expired jobs, fenced by id, token and expiry, to pending (due now) or dead.
#[derive(Clone, Copy, Debug)]
pub struct JobRescue<'a> {
    /// `(id, lease token)` of each job.
    pub jobs: &'a [(JobId, Uuid)],
    /// Dead instead of pending.
    pub dead: bool,
    /// The error text to store (and to append to each job's history, as in [`JobFailRetry`](super::JobFailRetry)).
    pub error: &'a str,
    /// How many entries the error history keeps.
    pub errors_kept: u32,
}

/// `job_prune`: delete up to `limit` finished jobs.
#[derive(Clone, Copy, Debug)]
pub struct JobPrune<'a> {
    /// Only these states (all finished, no repeats).
    pub states: &'a [JobState],
    /// Only jobs that finished longer ago than this.
    pub older_than: Duration,
    /// Only this queue, or every queue.
    pub queue: Option<&'a str>,
    /// Most rows in this statement (the engine repeats until fewer are deleted).
    pub limit: usize,
    /// A round of the retention task (every queue, one of its rules' ages), not an operator's
    /// prune: a driver that keeps finished jobs in time partitions may drop whole partitions
    /// that ended longer ago than `older_than`, and refuses an age shorter than a partition.
    pub retention: bool,
}

/// `maintenance_claim` / `maintenance_release`: one round of a maintenance task.
#[derive(Clone, Copy, Debug)]
pub struct MaintenanceRound<'a> {
    /// The task (`retention`, `gauges`): the name of its lease row.
    pub task: &'a str,
    /// The holder's token.
    pub token: Uuid,
}

/// `queue_key_rate_prune`: a chunk of a queue's stale key rate counts.
#[derive(Clone, Copy, Debug)]
pub struct KeyRatePrune<'a> {
    /// The queue.
    pub queue: &'a str,
    /// Counts of windows that started before this (microseconds since the epoch) go.
    pub before: i64,
    /// Most rows.
    pub limit: usize,
}

/// A queue's background work: rescuing expired leases, retention, and the lease that keeps one
/// process doing a kind of work at a time.
#[async_trait]
pub trait Maintenance: Lifecycle {
    /// `job_expired`: up to `limit` running jobs whose lease expired.
    async fn job_expired(&self, limit: usize) -> Result<Vec<Expired>, Self::Error>;

    /// `job_rescue`: moves the listed jobs that are still running under the listed token with
    /// an expired lease; rows changed.
    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64, Self::Error>;

    /// `job_prune`: deletes up to `p.limit` finished jobs outside workflows (a workflow's
    /// jobs go together, by `workflow_prune`); rows deleted.
    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64, Self::Error>;

    /// `maintenance_claim`: takes the lease row of maintenance task `round.task` for `lease`
    /// under `round.token` when its next run is due (the row's `next_at` has passed, so no lease runs), or
    /// renews it when `round.token` holds it already; whether it was taken. Retention takes a new
    /// token each round; the gauge sampler keeps one. The migrations create the rows
    /// (`retention`, `gauges`).
    async fn maintenance_claim(
        &self,
        round: MaintenanceRound<'_>,
        lease: Duration,
    ) -> Result<bool, Self::Error>;

    /// `maintenance_release`: the task's round under `round.token` is over; its next run is due
    /// `next_in` from now.
    async fn maintenance_release(
        &self,
        round: MaintenanceRound<'_>,
        next_in: Duration,
    ) -> Result<(), Self::Error>;

    /// `queue_key_rate_prune`: deletes up to `p.limit` of `p.queue`'s key rate counts whose
    /// window is before `p.before` (for retention), and says how many.
    async fn queue_key_rate_prune(&self, p: KeyRatePrune<'_>) -> Result<u64, Self::Error>;
}
