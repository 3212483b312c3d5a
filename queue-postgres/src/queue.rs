//! [`PostgresQueue`]: the engine over the PostgreSQL driver, plus pushing and completing inside
//! the caller's own transaction.

use queue_core::{Backend, Engine, JobId, Lease, NewJob, Result};
use sqlx::{PgPool, Postgres, Transaction};

use crate::builder::PostgresQueueBuilder;
use crate::driver::PgDriver;

/// A job queue stored in a PostgreSQL schema. Cheap to clone: clones share one connection pool,
/// one wake-up hub and one LISTEN task. Use it through the [`queue_core::Queue`] trait.
#[derive(Clone, Debug)]
pub struct PostgresQueue {
    pub(crate) engine: Engine<PgDriver>,
}

impl Backend for PostgresQueue {
    type Driver = PgDriver;

    fn engine(&self) -> &Engine<PgDriver> {
        &self.engine
    }
}

impl PostgresQueue {
    /// Starts configuring a queue stored in the database at `url`
    /// (`postgres://user:password@host:port/database`).
    pub fn builder(url: impl Into<String>) -> PostgresQueueBuilder {
        PostgresQueueBuilder::new(url.into())
    }

    /// The connection pool, e.g. to begin the transactions that [`PostgresQueue::push_in_tx`]
    /// and [`PostgresQueue::complete_in_tx`] take part in.
    ///
    /// On PostgreSQL (not behind `pooler=transaction`) its connections plan each prepared
    /// statement once (`plan_cache_mode = force_generic_plan`), yours included; `SET LOCAL
    /// plan_cache_mode = auto` in a transaction of yours gives a statement PostgreSQL's default.
    /// They also have `TCP_NODELAY` set.
    pub fn pool(&self) -> &PgPool {
        &self.engine.driver().pool
    }

    /// The schema holding the queue's tables.
    pub fn schema(&self) -> &str {
        &self.engine.driver().schema
    }

    /// The channel pushes NOTIFY and workers LISTEN on; its payloads are queue names.
    pub fn channel(&self) -> &str {
        &self.engine.driver().channel
    }

    /// Whether this value's LISTEN connection is up (it starts with the first
    /// [`queue_core::Queue::wait_for_work`]) and hears the queue's NOTIFYs (each new LISTEN
    /// sends itself a probe; one that is not heard within 5 s, as behind a pooler in
    /// transaction mode, is logged as a warning); while it is not, waiting falls back to
    /// polling.
    pub fn is_listening(&self) -> bool {
        self.engine.driver().listener.is_connected()
    }

    /// Stores a workflow inside the caller's transaction: it exists, with every job of it, iff
    /// the transaction commits.
    ///
    /// # Errors
    /// As [`queue_core::Queue::push_workflow`].
    pub async fn push_workflow_in_tx(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        workflow: queue_core::Workflow,
    ) -> Result<queue_core::PushedWorkflow> {
        self.engine.push_workflow_in(tx, workflow).await
    }

    /// Pushes `job` inside the caller's transaction: the job exists iff `tx` commits, and the
    /// NOTIFY that wakes workers is delivered at that commit.
    ///
    /// # Errors
    /// As [`queue_core::Queue::push`]. The transaction is aborted by a database error; roll it
    /// back.
    pub async fn push_in_tx(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        job: NewJob,
    ) -> Result<JobId> {
        self.engine.push_in(tx, job).await
    }

    /// Pushes every job of `jobs` inside the caller's transaction: all exist iff `tx` commits.
    ///
    /// # Errors
    /// As [`queue_core::Queue::push_batch`]. The transaction is aborted by a database error;
    /// roll it back.
    pub async fn push_batch_in_tx(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<JobId>> {
        self.engine.push_batch_in(tx, jobs).await
    }

    /// Marks the leased job completed inside the caller's transaction, so the handler's own
    /// writes and the completion commit together or not at all (exactly-once effects).
    ///
    /// # Errors
    /// [`queue_core::Error::LeaseLost`] or [`queue_core::Error::Cancelled`] when the lease is no
    /// longer current: nothing was changed, and the caller should roll back its own writes.
    pub async fn complete_in_tx(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        lease: &Lease,
    ) -> Result<()> {
        self.engine.complete_in(tx, lease, None).await
    }

    /// [`Self::complete_in_tx`], storing `output` with the completion (returned by `get` as
    /// `Job::output`).
    ///
    /// # Errors
    /// As [`Self::complete_in_tx`]; [`queue_core::Error::InvalidInput`] naming `output` when it
    /// is larger than the queue's `max_output_bytes` (nothing is changed).
    pub async fn complete_in_tx_with_output(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        lease: &Lease,
        output: &serde_json::value::RawValue,
    ) -> Result<()> {
        self.engine.complete_in(tx, lease, Some(output)).await
    }
}
