//! [`Claim`]: leasing due jobs, in one statement or in the optimistic claim's two steps, and
//! the claims of the controlled paths (a queue's limit, its concurrency keys).

use std::time::Duration;

use async_trait::async_trait;

use chrono::{DateTime, Utc};

use crate::job::{JobId, Leased};

use super::Lifecycle;

/// `job_claim` / `job_candidates`: claim (or read candidates for) up to `limit` due pending jobs
/// of one queue, in claim order (priority descending, then `run_at`, then id).
#[derive(Clone, Copy, Debug)]
pub struct JobClaim<'a> {
    /// The queue.
    pub queue: &'a str,
    /// Most jobs.
    pub limit: usize,
    /// Lease duration, from the database's now.
    pub lease: Duration,
    /// The claiming worker, stored in the row.
    pub worker: &'a str,
    /// `job_claim` only: the caller holds the queue's control row (`queue_control_lock`) in
    /// this transaction and has applied its pause and limit, so the statement does not check
    /// them again. Otherwise every claim statement gives out nothing of a queue that is paused
    /// or limited (the engine then claims through the control row).
    pub controls_checked: bool,
    /// `job_claim` and `job_complete_and_claim` of a driver whose [`Claim::claims_after`]:
    /// claim only jobs that sort after this position (the last job of an earlier claim of the
    /// queue), jobs of a higher priority first as always. A hint the engine gives while a
    /// queue has a backlog, so that a claim does not walk again the index entries of the jobs
    /// claimed before it; a driver without the capability never sees one.
    pub after: Option<ClaimAfter>,
}

/// A position in a queue's claim order (priority descending, then `run_at`, then id): the last
/// job of a claim, from which the next claim of the queue may continue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimAfter {
    /// The job's priority.
    pub priority: i32,
    /// When it was due.
    pub run_at: DateTime<Utc>,
    /// Its id.
    pub id: JobId,
}

impl ClaimAfter {
    /// The position of `job` in its queue's claim order.
    pub fn of(job: &crate::job::Job) -> Self {
        ClaimAfter {
            priority: job.priority,
            run_at: job.run_at,
            id: job.id,
        }
    }

    /// Whether `self` comes before `other` in claim order.
    pub fn precedes(&self, other: &ClaimAfter) -> bool {
        other
            .priority
            .cmp(&self.priority)
            .then(self.run_at.cmp(&other.run_at))
            .then(self.id.cmp(&other.id))
            .is_lt()
    }
}

/// Leasing due jobs: the one-statement claim, the optimistic claim's two steps, and the claims
/// of the controlled paths (inside the transaction that locked a queue's row, or by key).
#[async_trait]
pub trait Claim: Lifecycle {
    /// A candidate read by the optimistic claim's first step, handed back to its second.
    type Candidate: Send + Sync + 'static;

    /// Whether `job_claim` and `job_complete_and_claim` continue from [`JobClaim::after`]. A
    /// dialect says so where its claim index keeps the entries of claimed rows until cleanup
    /// removes them (PostgreSQL's MVCC: a transaction that holds an old snapshot keeps every
    /// one of them), so that a claim from the head of the queue walks them all again.
    fn claims_after(&self) -> bool {
        false
    }

    /// `job_claim`: claims atomically, skipping rows other claimers hold (or under the
    /// database's write lock), each claimed row with a new lease token.
    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>, Self::Error>;

    /// `job_claim` on the connection of a transaction of the driver's (`tx_begin`), which holds
    /// the queue's control row; `p.controls_checked` is set.
    async fn job_claim_in(
        &self,
        conn: &mut Self::Conn,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, Self::Error>;

    /// `job_candidates`: the optimistic claim's read, without locks.
    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<Self::Candidate>, Self::Error>;

    /// `job_claim_candidates`: the optimistic claim's write: claims each candidate only if it
    /// is still pending with the version that was read; returns the ones won.
    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        candidates: Vec<Self::Candidate>,
    ) -> Result<Vec<Leased>, Self::Error>;

    /// `job_claim_key` / `job_claim_unkeyed`: claims up to `p.limit` due pending jobs of
    /// `p.queue` whose concurrency key is `key` (`None`: jobs without a key), in claim order,
    /// as `job_claim_in` with `controls_checked`.
    async fn job_claim_key(
        &self,
        conn: &mut Self::Conn,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>, Self::Error>;

    /// `job_claim_keys`: `job_claim_key` for several keys at once, up to `n` jobs of each
    /// `(key, n)` of `keys`; the jobs of each key in the place of its key. A dialect with a
    /// round trip per statement claims them together; the default runs `job_claim_key` for
    /// each key in turn (SQLite, in-process).
    async fn job_claim_keys(
        &self,
        conn: &mut Self::Conn,
        p: JobClaim<'_>,
        keys: &[(String, usize)],
    ) -> Result<Vec<Vec<Leased>>, Self::Error> {
        let mut out = Vec::with_capacity(keys.len());
        for (key, n) in keys {
            out.push(
                self.job_claim_key(conn, JobClaim { limit: *n, ..p }, Some(key))
                    .await?,
            );
        }
        Ok(out)
    }
}
