//! [`SqliteQueue`]: the engine over the SQLite driver, plus pushing and completing inside the
//! caller's own transaction.

use std::fmt;

use queue_core::{Backend, Engine, JobId, Lease, NewJob, Result};
use sqlx::sqlite::SqlitePool;
use sqlx::{Sqlite, Transaction};

use crate::builder::SqliteQueueBuilder;
use crate::driver::SqliteDriver;

/// A job queue in one SQLite database file. Cheap to clone; clones share the connections.
///
/// Build one with [`SqliteQueue::builder`]; use it through the [`queue_core::Queue`] trait.
#[derive(Clone)]
pub struct SqliteQueue {
    pub(crate) engine: Engine<SqliteDriver>,
    /// The database, redacted, for `Debug`.
    pub(crate) target: std::sync::Arc<str>,
}

impl Backend for SqliteQueue {
    type Driver = SqliteDriver;

    fn engine(&self) -> &Engine<SqliteDriver> {
        &self.engine
    }
}

impl fmt::Debug for SqliteQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteQueue")
            .field("database", &self.target)
            .field("claim", &self.engine.capabilities().claim)
            .finish_non_exhaustive()
    }
}

impl SqliteQueue {
    /// Starts configuring a queue stored in `url_or_path`: `sqlite://path/to/file.db`,
    /// `sqlite:file.db` or a plain path (relative paths are relative to the working directory).
    /// The file is created when missing.
    pub fn builder(url_or_path: impl Into<String>) -> SqliteQueueBuilder {
        SqliteQueueBuilder::new(url_or_path)
    }

    /// The pool of the one writer connection, for statements of your own against the same
    /// database file (they queue behind the queue's writes).
    pub fn writer_pool(&self) -> &SqlitePool {
        &self.engine.driver().writer
    }

    /// Starts a transaction with `BEGIN IMMEDIATE` on the queue's writer connection, for
    /// [`push_in_tx`](Self::push_in_tx), [`complete_in_tx`](Self::complete_in_tx) and your own
    /// statements on the same file. Commit or roll it back promptly: it holds the only writer
    /// connection, so while it is open every other write of this queue value waits (do not call
    /// the queue's ordinary methods that write, such as `push`, while holding it).
    ///
    /// A transaction of your own on another connection to the same file works too; start it
    /// with `BEGIN IMMEDIATE` so it takes the write lock before it reads.
    ///
    /// # Errors
    /// [`queue_core::Error::Unavailable`] when the write lock or connection is not free in time.
    pub async fn begin(&self) -> Result<Transaction<'static, Sqlite>> {
        self.writer_pool()
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| self.engine.error(e))
    }

    /// Pushes `job` inside the caller's transaction: the job exists iff `tx` commits. Workers
    /// of this process are not woken at the commit; they find the job at their next poll.
    ///
    /// # Errors
    /// As [`queue_core::Queue::push`].
    pub async fn push_in_tx(&self, tx: &mut Transaction<'_, Sqlite>, job: NewJob) -> Result<JobId> {
        self.engine.push_in(tx, job).await
    }

    /// Pushes a workflow inside the caller's transaction: it exists, with every job of it, iff
    /// `tx` commits.
    ///
    /// # Errors
    /// As [`queue_core::Queue::push_workflow`].
    pub async fn push_workflow_in_tx(
        &self,
        tx: &mut Transaction<'_, Sqlite>,
        workflow: queue_core::Workflow,
    ) -> Result<queue_core::PushedWorkflow> {
        self.engine.push_workflow_in(tx, workflow).await
    }

    /// Pushes every job of `jobs` inside the caller's transaction: all exist iff `tx` commits,
    /// and a batch that fails stores nothing (a savepoint is rolled back) while the caller's own
    /// writes stay.
    ///
    /// # Errors
    /// As [`queue_core::Queue::push_batch`].
    pub async fn push_batch_in_tx(
        &self,
        tx: &mut Transaction<'_, Sqlite>,
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
        tx: &mut Transaction<'_, Sqlite>,
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
        tx: &mut Transaction<'_, Sqlite>,
        lease: &Lease,
        output: &serde_json::value::RawValue,
    ) -> Result<()> {
        self.engine.complete_in(tx, lease, Some(output)).await
    }

    /// Closes every connection; later calls fail with [`queue_core::Error::Unavailable`].
    pub async fn close(&self) {
        let driver = self.engine.driver();
        driver.writer.close().await;
        driver.reader.close().await;
    }
}
