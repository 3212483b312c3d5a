//! [`MsSqlQueue`]: the engine over the SQL Server driver, plus pushing and completing inside the
//! caller's own transaction.

use queue_core::{Backend, Engine, JobId, Lease, NewJob, Result};

use crate::builder::MsSqlQueueBuilder;
use crate::driver::MsSqlDriver;
use crate::pool::{MsSqlTransaction, Pool};

/// A durable job queue in a SQL Server 2016+ (or Azure SQL) database schema. Cheap to clone:
/// clones share one pool and one wake-up hub. Use it through the [`queue_core::Queue`] trait.
#[derive(Clone)]
pub struct MsSqlQueue {
    pub(crate) engine: Engine<MsSqlDriver>,
}

impl Backend for MsSqlQueue {
    type Driver = MsSqlDriver;

    fn engine(&self) -> &Engine<MsSqlDriver> {
        &self.engine
    }
}

impl std::fmt::Debug for MsSqlQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MsSqlQueue")
            .field("schema", &self.engine.driver().schema)
            .field("capabilities", self.engine.capabilities())
            .finish_non_exhaustive()
    }
}

impl MsSqlQueue {
    /// Starts configuring a queue in the database `url` names: a URL
    /// (`mssql://user:password@host:1433/database?encrypt=true&trust_server_certificate=false`,
    /// also `sqlserver://`), the `sqlserver://host:1433;database=...;user=...` form, or an
    /// ADO.NET connection string (`Server=tcp:host,1433;Database=...;User Id=...;Password=...`).
    pub fn builder(url: impl Into<String>) -> MsSqlQueueBuilder {
        MsSqlQueueBuilder::new(url.into())
    }

    /// The connection pool.
    pub fn pool(&self) -> &Pool {
        &self.engine.driver().pool
    }

    /// The schema holding the queue's tables.
    pub fn schema(&self) -> &str {
        &self.engine.driver().schema
    }

    /// Begins a transaction of the caller's on a pooled session, for
    /// [`MsSqlQueue::push_in_tx`], [`MsSqlQueue::complete_in_tx`] and the caller's own
    /// statements ([`MsSqlTransaction::client`]).
    ///
    /// # Errors
    /// [`queue_core::Error::Unavailable`] or [`queue_core::Error::Database`].
    pub async fn begin(&self) -> Result<MsSqlTransaction> {
        MsSqlTransaction::begin(self.pool())
            .await
            .map_err(|e| self.engine.error(e))
    }

    /// Wakes this queue value's workers waiting on `queue`, e.g. after committing a transaction
    /// that pushed with [`MsSqlQueue::push_in_tx`] (otherwise they notice at their next poll).
    pub fn notify_pushed(&self, queue: &str, jobs: usize) {
        self.engine.wake_local(queue, jobs);
    }

    /// Stores `job` inside the caller's transaction: it exists iff `tx` commits. Workers notice
    /// it at their next poll, or at once after [`MsSqlQueue::notify_pushed`].
    ///
    /// # Errors
    /// As [`queue_core::Queue::push`]. The transaction stays open; roll it back.
    pub async fn push_in_tx(&self, tx: &mut MsSqlTransaction, job: NewJob) -> Result<JobId> {
        self.engine.push_in(tx, job).await
    }

    /// Stores a workflow inside the caller's transaction: it exists, with every job of it, iff
    /// `tx` commits.
    ///
    /// # Errors
    /// As [`queue_core::Queue::push_workflow`]. The transaction stays open; roll it back.
    pub async fn push_workflow_in_tx(
        &self,
        tx: &mut MsSqlTransaction,
        workflow: queue_core::Workflow,
    ) -> Result<queue_core::PushedWorkflow> {
        self.engine.push_workflow_in(tx, workflow).await
    }

    /// Stores every job of `jobs` inside the caller's transaction: all exist iff `tx` commits.
    /// A failed batch stores nothing (a savepoint is rolled back when it took several
    /// statements) and leaves the caller's own writes in place.
    ///
    /// # Errors
    /// As [`queue_core::Queue::push_batch`].
    pub async fn push_batch_in_tx(
        &self,
        tx: &mut MsSqlTransaction,
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
    pub async fn complete_in_tx(&self, tx: &mut MsSqlTransaction, lease: &Lease) -> Result<()> {
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
        tx: &mut MsSqlTransaction,
        lease: &Lease,
        output: &serde_json::value::RawValue,
    ) -> Result<()> {
        self.engine.complete_in(tx, lease, Some(output)).await
    }
}
