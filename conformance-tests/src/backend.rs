//! [`SqlBackend`]: what one backend built on sqlx tells the suite, and [`SqlHarness`], the one
//! [`Harness`] (with its fixture and transaction hooks) made from it. A backend's test file is
//! an implementation of [`SqlBackend`] and a call of [`crate::main`].

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use queue_core::{ClaimStrategy, JobId, JobState, Lease, NewJob, Queue};
use sqlx::{Database, Transaction};

use crate::harness::{
    Discovery, Fixture, Harness, HeldLock, HeldPush, Server, TestConfig, Transactions,
};

/// One isolated place on a server: a PostgreSQL schema, a MySQL table prefix, a SQLite file.
pub struct Namespace {
    /// Its name (schema, prefix, or file path).
    pub name: String,
    /// What must live as long as the namespace (a temporary directory).
    pub keep: Option<tempfile::TempDir>,
}

impl Namespace {
    /// A namespace called `name` with nothing to keep alive.
    pub fn named(name: String) -> Self {
        Namespace { name, keep: None }
    }
}

/// What a backend built on sqlx provides to the suite.
#[async_trait]
pub trait SqlBackend: Send + Sync + 'static {
    /// The sqlx database.
    type Db: Database;
    /// The backend's queue type.
    type Queue: Queue + Clone;

    /// The backend's name as `QUEUE_TEST_REQUIRE` spells it.
    const NAME: &'static str;

    /// The claim strategies it is tested with.
    const CLAIMS: &'static [ClaimStrategy];

    /// How many concurrent poppers the concurrency case runs (at least 16).
    const POPPERS: usize = 16;

    /// Finds the servers to run against.
    async fn servers() -> Discovery;

    /// A fresh, unused namespace on `server`.
    fn namespace(server: &Server) -> anyhow::Result<Namespace>;

    /// Connects a queue to `ns` on `server` with `config` (does not migrate).
    async fn connect(
        server: &Server,
        ns: &str,
        config: &TestConfig,
    ) -> queue_core::Result<Self::Queue>;

    /// Connects a queue to a database that cannot be reached.
    async fn unreachable(config: &TestConfig) -> queue_core::Result<Self::Queue>;

    /// Creates the caller's table `effects` (one text column `marker`) in `ns`.
    async fn create_effects(q: &Self::Queue, ns: &str) -> anyhow::Result<()>;

    /// Inserts an effect inside `tx`.
    async fn insert_effect(
        tx: &mut Transaction<'static, Self::Db>,
        ns: &str,
        marker: &str,
    ) -> anyhow::Result<()>;

    /// How many committed effects are named `marker`.
    async fn count_effects(q: &Self::Queue, ns: &str, marker: &str) -> anyhow::Result<u64>;

    /// Begins a transaction of the caller's on the queue's database.
    async fn begin(q: &Self::Queue) -> queue_core::Result<Transaction<'static, Self::Db>>;

    /// The backend's `push_in_tx`.
    async fn push_in_tx(
        q: &Self::Queue,
        tx: &mut Transaction<'static, Self::Db>,
        job: NewJob,
    ) -> queue_core::Result<JobId>;

    /// The backend's `push_batch_in_tx`.
    async fn push_batch_in_tx(
        q: &Self::Queue,
        tx: &mut Transaction<'static, Self::Db>,
        jobs: Vec<NewJob>,
    ) -> queue_core::Result<Vec<JobId>>;

    /// The backend's `push_workflow_in_tx`.
    async fn push_workflow_in_tx(
        q: &Self::Queue,
        tx: &mut Transaction<'static, Self::Db>,
        workflow: queue_core::Workflow,
    ) -> queue_core::Result<queue_core::PushedWorkflow>;

    /// The backend's `complete_in_tx`.
    async fn complete_in_tx(
        q: &Self::Queue,
        tx: &mut Transaction<'static, Self::Db>,
        lease: &Lease,
    ) -> queue_core::Result<()>;

    /// Applies the previous release's migrations to the unmigrated `ns` and writes one job in
    /// each state as that release wrote them (see [`Fixture::seed_previous_release`]).
    async fn seed_previous_release(
        q: &Self::Queue,
        ns: &str,
    ) -> anyhow::Result<Option<Vec<(JobId, JobState)>>> {
        let _ = (q, ns);
        Ok(None)
    }

    /// Applies the previous release's migrations to the unmigrated namespace of `q` (see
    /// [`Fixture::migrate_previous_schema`]); `false` where the jobs table did not change since.
    async fn migrate_previous_schema(q: &Self::Queue) -> anyhow::Result<bool> {
        let _ = q;
        Ok(false)
    }

    /// The shortest retention rule the queues this backend connects accept (see
    /// [`Fixture::retention_floor`]); `None`: any.
    fn retention_floor() -> Option<std::time::Duration> {
        None
    }

    /// Locks the row of job `id` inside `tx` (see [`Fixture::lock_job`]): a locking read, or
    /// where the database has one write lock, a write that takes it.
    async fn lock_job(
        tx: &mut Transaction<'static, Self::Db>,
        ns: &str,
        id: JobId,
    ) -> anyhow::Result<()>;

    /// Makes the change of job `id` from cancelled to waiting fail from now on (see
    /// [`Fixture::break_reopen`]): a trigger on the jobs table that raises an error for the
    /// ids listed in a table of the test's own, to which `id` is added.
    async fn break_reopen(q: &Self::Queue, ns: &str, id: JobId) -> anyhow::Result<()>;

    /// Drops what [`SqlBackend::break_reopen`] made (nothing when it made nothing).
    async fn mend(q: &Self::Queue, ns: &str) -> anyhow::Result<()>;

    /// Drops `ns` and everything in it, and closes `q`.
    async fn drop_namespace(q: &Self::Queue, ns: &str) -> anyhow::Result<()>;

    /// Closes a queue value's connections.
    async fn close(q: &Self::Queue);
}

/// The [`Harness`] of a [`SqlBackend`] with one claim strategy.
pub struct SqlHarness<B> {
    claim: ClaimStrategy,
    backend: PhantomData<fn() -> B>,
}

impl<B: SqlBackend> SqlHarness<B> {
    /// The harness testing `claim`.
    pub fn new(claim: ClaimStrategy) -> Self {
        SqlHarness {
            claim,
            backend: PhantomData,
        }
    }
}

fn hook_error(e: sqlx::Error) -> queue_core::Error {
    queue_core::Error::database(e)
}

fn hook_anyhow(e: anyhow::Error) -> queue_core::Error {
    queue_core::Error::database(Box::<dyn std::error::Error + Send + Sync>::from(format!(
        "{e:#}"
    )))
}

#[async_trait]
impl<B: SqlBackend> Harness for SqlHarness<B> {
    fn backend(&self) -> &'static str {
        B::NAME
    }

    fn claim(&self) -> ClaimStrategy {
        self.claim
    }

    fn poppers(&self) -> usize {
        B::POPPERS
    }

    async fn servers(&self) -> Discovery {
        B::servers().await
    }

    async fn fixture(
        &self,
        server: &Server,
        config: &TestConfig,
        migrate: bool,
    ) -> anyhow::Result<Box<dyn Fixture>> {
        let ns = B::namespace(server)?;
        let queue = B::connect(server, &ns.name, config).await?;
        if migrate {
            queue.migrate().await?;
            B::create_effects(&queue, &ns.name).await?;
        }
        Ok(Box::new(SqlFixture::<B> {
            queue,
            server: server.clone(),
            ns,
            config: config.clone(),
            others: Mutex::default(),
        }))
    }

    async fn unreachable(&self, config: &TestConfig) -> queue_core::Result<Option<Arc<dyn Queue>>> {
        Ok(Some(Arc::new(B::unreachable(config).await?)))
    }
}

/// A migrated namespace and a queue on it.
struct SqlFixture<B: SqlBackend> {
    queue: B::Queue,
    server: Server,
    ns: Namespace,
    config: TestConfig,
    others: Mutex<Vec<B::Queue>>,
}

#[async_trait]
impl<B: SqlBackend> Fixture for SqlFixture<B> {
    fn queue(&self) -> Arc<dyn Queue> {
        Arc::new(self.queue.clone())
    }

    async fn another(&self) -> anyhow::Result<Arc<dyn Queue>> {
        let q = B::connect(&self.server, &self.ns.name, &self.config).await?;
        self.others
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(q.clone());
        Ok(Arc::new(q))
    }

    fn transactions(&self) -> Option<&dyn Transactions> {
        Some(self)
    }

    async fn seed_previous_release(&self) -> anyhow::Result<Option<Vec<(JobId, JobState)>>> {
        B::seed_previous_release(&self.queue, &self.ns.name).await
    }

    async fn migrate_previous_schema(&self) -> anyhow::Result<bool> {
        B::migrate_previous_schema(&self.queue).await
    }

    fn retention_floor(&self) -> Option<std::time::Duration> {
        B::retention_floor()
    }

    async fn lock_job(&self, id: JobId) -> anyhow::Result<Option<Box<dyn HeldLock>>> {
        let mut tx = B::begin(&self.queue).await?;
        B::lock_job(&mut tx, &self.ns.name, id).await?;
        Ok(Some(Box::new(SqlTx::<B> { tx })))
    }

    async fn break_reopen(&self, id: JobId) -> anyhow::Result<bool> {
        B::break_reopen(&self.queue, &self.ns.name, id).await?;
        Ok(true)
    }

    async fn mend(&self) -> anyhow::Result<()> {
        B::mend(&self.queue, &self.ns.name).await
    }

    async fn teardown(&self) -> anyhow::Result<()> {
        let others = std::mem::take(&mut *self.others.lock().unwrap_or_else(|e| e.into_inner()));
        for q in others {
            B::close(&q).await;
        }
        B::drop_namespace(&self.queue, &self.ns.name).await
    }
}

/// A transaction of the test's own, kept open: it holds a row lock ([`HeldLock`]) or a push
/// not committed yet ([`HeldPush`]).
struct SqlTx<B: SqlBackend> {
    tx: Transaction<'static, B::Db>,
}

#[async_trait]
impl<B: SqlBackend> HeldLock for SqlTx<B> {
    async fn release(self: Box<Self>) -> anyhow::Result<()> {
        self.tx.rollback().await?;
        Ok(())
    }
}

#[async_trait]
impl<B: SqlBackend> HeldPush for SqlTx<B> {
    async fn commit(self: Box<Self>) -> anyhow::Result<()> {
        self.tx.commit().await?;
        Ok(())
    }
}

#[async_trait]
impl<B: SqlBackend> Transactions for SqlFixture<B> {
    async fn push_held(
        &self,
        job: NewJob,
    ) -> queue_core::Result<Option<(JobId, Box<dyn HeldPush>)>> {
        let mut tx = B::begin(&self.queue).await?;
        let id = B::push_in_tx(&self.queue, &mut tx, job).await?;
        Ok(Some((id, Box::new(SqlTx::<B> { tx }))))
    }

    async fn push_in_tx(
        &self,
        job: NewJob,
        marker: &str,
        commit: bool,
    ) -> queue_core::Result<JobId> {
        let mut tx = B::begin(&self.queue).await?;
        B::insert_effect(&mut tx, &self.ns.name, marker)
            .await
            .map_err(hook_anyhow)?;
        let id = B::push_in_tx(&self.queue, &mut tx, job).await?;
        if commit {
            tx.commit().await.map_err(hook_error)?;
        } else {
            tx.rollback().await.map_err(hook_error)?;
        }
        Ok(id)
    }

    async fn push_batch_in_tx(
        &self,
        jobs: Vec<NewJob>,
        marker: &str,
    ) -> queue_core::Result<Vec<JobId>> {
        let mut tx = B::begin(&self.queue).await?;
        B::insert_effect(&mut tx, &self.ns.name, marker)
            .await
            .map_err(hook_anyhow)?;
        let pushed = B::push_batch_in_tx(&self.queue, &mut tx, jobs).await;
        tx.commit().await.map_err(hook_error)?;
        pushed
    }

    async fn push_workflow_in_tx(
        &self,
        workflow: queue_core::Workflow,
        marker: &str,
        commit: bool,
    ) -> queue_core::Result<queue_core::PushedWorkflow> {
        let mut tx = B::begin(&self.queue).await?;
        B::insert_effect(&mut tx, &self.ns.name, marker)
            .await
            .map_err(hook_anyhow)?;
        let pushed = B::push_workflow_in_tx(&self.queue, &mut tx, workflow).await?;
        if commit {
            tx.commit().await.map_err(hook_error)?;
        } else {
            tx.rollback().await.map_err(hook_error)?;
        }
        Ok(pushed)
    }

    async fn complete_in_tx(&self, lease: &Lease, marker: &str) -> queue_core::Result<()> {
        let mut tx = B::begin(&self.queue).await?;
        B::insert_effect(&mut tx, &self.ns.name, marker)
            .await
            .map_err(hook_anyhow)?;
        match B::complete_in_tx(&self.queue, &mut tx, lease).await {
            Ok(()) => tx.commit().await.map_err(hook_error),
            Err(e) => {
                tx.rollback().await.map_err(hook_error)?;
                Err(e)
            }
        }
    }

    async fn effects(&self, marker: &str) -> anyhow::Result<u64> {
        B::count_effects(&self.queue, &self.ns.name, marker).await
    }
}
