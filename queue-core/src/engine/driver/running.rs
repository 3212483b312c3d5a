//! [`Running`]: the fenced transitions of a leased job (complete, fail, snooze, release, extend,
//! its metadata), each applied only while the lease still holds.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::job::{JobId, JobState, Lease, Leased};

use super::{JobClaim, Lifecycle, Target};

/// `job_complete`: a fenced completion.
#[derive(Clone, Copy, Debug)]
pub struct JobComplete<'a> {
    /// The lease the completion is reported under.
    pub lease: &'a Lease,
    /// The handler's recorded output (JSON text, validated), stored in the same statement.
    pub output: Option<&'a str>,
    /// What becomes of the row ([`Completion::of`]).
    pub completion: Completion,
}

/// `job_complete_many`: fenced completions of several jobs, none with an output.
#[derive(Clone, Copy, Debug)]
pub struct JobCompleteMany<'a> {
    /// The leases the completions are reported under.
    pub leases: &'a [Lease],
    /// What becomes of the rows ([`Completion::of`] without an output).
    pub completion: Completion,
}

/// What a completion does with the job's row. The engine decides it, once, from the queue's
/// options and the completion itself; the statements only apply it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// The row stays, completed.
    Keep,
    /// The row is deleted instead, fenced by its lease like the update, unless the statement
    /// finds it is one every dialect keeps all the same (facts only the row holds): a job of a
    /// workflow (its dependents read its state and output) or a job whose uniqueness covers
    /// the completed state (the rule lasts until retention deletes it).
    Delete,
}

impl Completion {
    /// The completion of a queue that keeps completed jobs or not
    /// ([`CommonOptions::keep_completed`](crate::engine::CommonOptions::keep_completed)), storing
    /// `output`: a completion with an output keeps its row whatever the option (the output is
    /// there to be read).
    pub fn of(keep_completed: bool, output: Option<&str>) -> Self {
        if keep_completed || output.is_some() {
            Completion::Keep
        } else {
            Completion::Delete
        }
    }

    /// Whether the statement deletes the rows it may.
    pub fn deletes(self) -> bool {
        self == Completion::Delete
    }
}

/// `job_fail_retry`: a fenced failure that sends the job back to pending.
///
/// Every failure (and every rescue) also appends `{"attempt", "at", "error", "worker"}` to the
/// job's `errors` list (a JSON array): `attempt` is the row's attempt count, `at` the database's
/// now in RFC 3339 (UTC), `error` the text stored in `last_error`, `worker` the row's worker; the
/// oldest entries are dropped so that at most `errors_kept` remain.
#[derive(Clone, Copy, Debug)]
pub struct JobFailRetry<'a> {
    /// The lease the failure is reported under.
    pub lease: &'a Lease,
    /// Due again this long after the database's now.
    pub delay: Duration,
    /// The error text to store (already bounded and made storable by the engine).
    pub error: &'a str,
    /// How many entries the error history keeps.
    pub errors_kept: u32,
}

/// `job_fail_dead`: a fenced failure that makes the job dead (history as in [`JobFailRetry`]).
#[derive(Clone, Copy, Debug)]
pub struct JobFailDead<'a> {
    /// The lease the failure is reported under.
    pub lease: &'a Lease,
    /// The error text to store.
    pub error: &'a str,
    /// How many entries the error history keeps.
    pub errors_kept: u32,
}

/// `job_snooze`: a fenced return to pending that gives the attempt back and counts a snooze,
/// only while the job has snoozed fewer than `max_snoozes` times.
#[derive(Clone, Copy, Debug)]
pub struct JobSnooze<'a> {
    /// The lease the snooze is asked under.
    pub lease: &'a Lease,
    /// Due again this long after the database's now.
    pub delay: Duration,
    /// The row changes only while its snooze count is below this.
    pub max_snoozes: u32,
}

/// A running job's metadata as `job_meta_get` reads it: the JSON text (or NULL) and the row's
/// version, which `job_meta_set` compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredMeta {
    /// The stored object, `None` when the column is NULL.
    pub meta: Option<String>,
    /// The row's version when it was read.
    pub version: i64,
}

/// `job_meta_set`: writes a running job's metadata, fenced by the lease and by the version read
/// with it (another merge, or a heartbeat, in between changes nothing).
#[derive(Clone, Copy, Debug)]
pub struct JobMetaSet<'a> {
    /// The lease the merge is made under.
    pub lease: &'a Lease,
    /// The version `job_meta_get` read.
    pub version: i64,
    /// The merged object (JSON text, validated).
    pub meta: &'a str,
}

/// The fenced transitions of a leased job: each applies only while the lease it names holds.
#[async_trait]
pub trait Running: Lifecycle {
    /// `job_complete`: completes the job if its lease is current, storing `p.output`; rows
    /// changed (0 or 1).
    async fn job_complete(
        &self,
        target: Target<'_, Self::Conn>,
        p: JobComplete<'_>,
    ) -> Result<u64, Self::Error>;

    /// `job_complete_many`: completes every job whose lease is current (with
    /// [`Completion::Delete`], deleting the rows it allows); rows changed or deleted.
    async fn job_complete_many(&self, c: JobCompleteMany<'_>) -> Result<u64, Self::Error>;

    /// `job_complete_and_claim`: [`Running::job_complete_many`] of `c`, then
    /// [`Claim::job_claim`](super::Claim::job_claim) of `p`, in one round trip or one
    /// transaction, all or nothing; the rows completed and the jobs claimed. `Ok(None)` (the default) means the dialect cannot
    /// do better than the two calls, which the engine then makes itself.
    async fn job_complete_and_claim(
        &self,
        c: JobCompleteMany<'_>,
        p: JobClaim<'_>,
    ) -> Result<Option<(u64, Vec<Leased>)>, Self::Error> {
        let _ = (c, p);
        Ok(None)
    }

    /// `job_fail_retry`: back to pending after `delay`, the error recorded; rows changed.
    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64, Self::Error>;

    /// `job_fail_dead`: dead, the error recorded; rows changed.
    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64, Self::Error>;

    /// `job_snooze`: back to pending after `p.delay`, the attempt given back, the snooze counted
    /// (see [`JobSnooze`]); rows changed.
    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64, Self::Error>;

    /// `job_meta_get`: the metadata and version of the job if `lease` is current, else `None`.
    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>, Self::Error>;

    /// `job_meta_set`: see [`JobMetaSet`]; rows changed.
    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64, Self::Error>;

    /// `job_release`: back to pending, due now, the attempt given back; rows changed.
    async fn job_release(&self, lease: &Lease) -> Result<u64, Self::Error>;

    /// `job_extend`: the lease's expiry moved to `by` from the database's now; the new expiry,
    /// or `None` when the lease is not current.
    async fn job_extend(
        &self,
        lease: &Lease,
        by: Duration,
    ) -> Result<Option<DateTime<Utc>>, Self::Error>;

    /// `job_state`: the job's state, `None` when there is no such job. Inside a caller's
    /// transaction it reads the latest committed row whatever the isolation level.
    async fn job_state(
        &self,
        target: Target<'_, Self::Conn>,
        id: JobId,
    ) -> Result<Option<JobState>, Self::Error>;
}
