//! [`MySqlQueue`]: the engine over the MySQL/MariaDB driver, plus pushing and completing inside
//! the caller's own transaction.

use queue_core::{Backend, Engine, JobId, Lease, NewJob, Result};
use sqlx::mysql::MySqlPool;
use sqlx::{Executor, MySql, Transaction};

use crate::builder::MySqlQueueBuilder;
use crate::driver::MySqlDriver;

/// A durable job queue in a MySQL 8.0+ or MariaDB 10.6+ database (older servers with the
/// optimistic claim). Cheap to clone: clones share one pool. Use it through the
/// [`queue_core::Queue`] trait.
#[derive(Clone)]
pub struct MySqlQueue {
    pub(crate) engine: Engine<MySqlDriver>,
}

impl Backend for MySqlQueue {
    type Driver = MySqlDriver;

    fn engine(&self) -> &Engine<MySqlDriver> {
        &self.engine
    }
}

impl std::fmt::Debug for MySqlQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlQueue")
            .field("table_prefix", &self.engine.driver().prefix)
            .field("capabilities", self.engine.capabilities())
            .finish_non_exhaustive()
    }
}

impl MySqlQueue {
    /// A builder for a queue at `url` (`mysql://user:pass@host:3306/db`; `mariadb://` is
    /// accepted too).
    pub fn builder(url: impl Into<String>) -> MySqlQueueBuilder {
        MySqlQueueBuilder::new(url)
    }

    /// The connection pool, e.g. to begin a transaction for [`MySqlQueue::push_in_tx`].
    pub fn pool(&self) -> &MySqlPool {
        &self.engine.driver().pool
    }

    /// The table prefix in use.
    pub fn table_prefix(&self) -> &str {
        &self.engine.driver().prefix
    }

    /// The name of the jobs table (`{prefix}jobs`).
    pub fn jobs_table(&self) -> String {
        format!("{}jobs", self.table_prefix())
    }

    /// Drops this queue's tables, losing every job (for tests and uninstalling).
    ///
    /// # Errors
    /// [`queue_core::Error::Unavailable`] or [`queue_core::Error::Database`].
    pub async fn drop_tables(&self) -> Result<()> {
        let driver = self.engine.driver();
        (&driver.pool)
            .execute(driver.sql.drop_tables.clone())
            .await
            .map_err(|e| self.engine.error(e))?;
        Ok(())
    }

    /// Wakes this queue value's workers waiting on `queue`, e.g. after committing a transaction
    /// that pushed with [`MySqlQueue::push_in_tx`] (otherwise they notice at their next poll).
    pub fn notify_pushed(&self, queue: &str, jobs: usize) {
        self.engine.wake_local(queue, jobs);
    }

    /// Stores `job` inside the caller's transaction: it exists iff the transaction commits.
    /// Workers of this process notice it at their next poll, or at once after
    /// [`MySqlQueue::notify_pushed`].
    ///
    /// # Errors
    /// As [`queue_core::Queue::push`].
    pub async fn push_in_tx(&self, tx: &mut Transaction<'_, MySql>, job: NewJob) -> Result<JobId> {
        self.engine.push_in(tx, job).await
    }

    /// Stores a workflow inside the caller's transaction: it exists, with every job of it, iff
    /// the transaction commits.
    ///
    /// # Errors
    /// As [`queue_core::Queue::push_workflow`].
    pub async fn push_workflow_in_tx(
        &self,
        tx: &mut Transaction<'_, MySql>,
        workflow: queue_core::Workflow,
    ) -> Result<queue_core::PushedWorkflow> {
        self.engine.push_workflow_in(tx, workflow).await
    }

    /// Stores `jobs` inside the caller's transaction: all of them iff the transaction commits.
    /// A failed batch stores nothing (a savepoint is rolled back) and leaves the caller's own
    /// writes in place.
    ///
    /// # Errors
    /// As [`queue_core::Queue::push_batch`].
    pub async fn push_batch_in_tx(
        &self,
        tx: &mut Transaction<'_, MySql>,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<JobId>> {
        self.engine.push_batch_in(tx, jobs).await
    }

    /// Completes the leased job inside the caller's transaction, so the completion commits
    /// together with the handler's own writes (exactly-once effects on this database).
    ///
    /// # Errors
    /// [`queue_core::Error::LeaseLost`] or [`queue_core::Error::Cancelled`] when the lease is no
    /// longer current: the caller must roll back its transaction.
    pub async fn complete_in_tx(
        &self,
        tx: &mut Transaction<'_, MySql>,
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
        tx: &mut Transaction<'_, MySql>,
        lease: &Lease,
        output: &serde_json::value::RawValue,
    ) -> Result<()> {
        self.engine.complete_in(tx, lease, Some(output)).await
    }
}
