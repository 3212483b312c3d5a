//! [`Push`]: storing new jobs (plain, deduplicated and unique).

use std::time::Duration;

use async_trait::async_trait;

use crate::job::{JobId, NewJob};

use super::{Lifecycle, Target};

/// `job_insert`: store `jobs`, all or none (the engine wraps a call of several statements in a
/// transaction: see [`Push::job_insert_statements`]).
#[derive(Clone, Copy, Debug)]
pub struct JobInsert<'a> {
    /// The validated jobs, in order.
    pub jobs: &'a [NewJob],
    /// For each job, how long after the database's now it becomes due.
    pub delays: &'a [Duration],
    /// Queues to wake in other processes when the insert commits (dialects with database
    /// notifications send them in the same statement or transaction; others ignore this).
    pub notify: &'a [&'a str],
}

/// `job_insert_unique`: store one job with a unique key, unless a job with the same key holds
/// its place (its state is in its own state set): the database's unique index decides, never a
/// read before the insert.
#[derive(Clone, Copy, Debug)]
pub struct JobInsertUnique<'a> {
    /// The validated job.
    pub job: &'a NewJob,
    /// How long after the database's now it becomes due.
    pub delay: Duration,
    /// Its unique key.
    pub key: &'a [u8; 32],
    /// The states in which it holds its place, as bits (see [`crate::unique::state_bit`]).
    pub states: i16,
}

/// What `job_insert_unique` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UniqueInsert {
    /// The job was stored.
    Inserted,
    /// A job with the same key holds its place: this one; nothing was stored.
    Held(JobId),
    /// The key was held when the insert ran, but no holder was found right after (it left its
    /// states meanwhile, or was not yet visible): nothing was stored; the engine tries again.
    Released,
}

/// `job_unique_replace`: the payload, priority and run time of the pending job `id` become the
/// new job's.
#[derive(Clone, Copy, Debug)]
pub struct JobUniqueReplace<'a> {
    /// The pending job that holds the key.
    pub id: JobId,
    /// The job whose payload and priority it takes.
    pub job: &'a NewJob,
    /// Its new run time: this long after the database's now.
    pub delay: Duration,
}

/// Storing new jobs: a batch, a job with a unique key, and the lookups deduplication needs.
#[async_trait]
pub trait Push: Lifecycle {
    /// `job_insert`: stores every job of `p`, with the statements
    /// [`Push::job_insert_statements`] counts. One statement is atomic by itself; the engine
    /// runs a call of more than one inside a transaction, so that it stores all or none.
    async fn job_insert(
        &self,
        target: Target<'_, Self::Conn>,
        p: JobInsert<'_>,
    ) -> Result<(), Self::Error>;

    /// How many statements [`Push::job_insert`] of `p` runs (the dialect's parameter and
    /// packet limits decide; one unless the driver says otherwise). When it is more than one,
    /// the engine runs the call inside a transaction of the driver's ([`Lifecycle::tx_begin`]) for
    /// [`Target::Pool`], and inside a savepoint ([`Lifecycle::savepoint`]) of the transaction it
    /// is given for [`Target::Tx`], so that a failed batch leaves none of its jobs in that
    /// transaction, and the transaction's own writes as they were.
    fn job_insert_statements(&self, p: JobInsert<'_>) -> usize {
        let _ = p;
        1
    }

    /// `job_insert_unique`: see [`JobInsertUnique`].
    async fn job_insert_unique(
        &self,
        target: Target<'_, Self::Conn>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert, Self::Error>;

    /// `job_unique_replace`: see [`JobUniqueReplace`]; rows changed (0 when the job is no
    /// longer pending).
    async fn job_unique_replace(
        &self,
        target: Target<'_, Self::Conn>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64, Self::Error>;

    /// `job_unique_holder`: another job with the unique key of job `id` that holds its place
    /// (for the error of a retry that clashed).
    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>, Self::Error>;

    /// `job_dedup_live`: the `(queue, dedup key)` pairs of live (pending or running) jobs whose
    /// queue is one of `queues` and whose key is one of `keys`.
    async fn job_dedup_live(
        &self,
        target: Target<'_, Self::Conn>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>, Self::Error>;
}
