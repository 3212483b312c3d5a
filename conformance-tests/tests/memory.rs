//! The conformance suite on the in-memory store (a named store of its own per case, so that a
//! second queue value on the same name stands for another process), in both claim strategies
//! it offers. What does not apply shows as ignored with its reason: caller transactions (there
//! is no database of the caller's), the previous release's schema (there was none), and an
//! unreachable database (the jobs live in the test's own process).

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use conformance_tests::{
    dialect_tests, run_suite, Discovery, Fixture, Harness, HeldLock, Server, TestConfig,
};
use queue_core::engine::Lifecycle as _;
use queue_core::{Backend as _, ClaimStrategy, JobId, Queue};
use queue_memory::{MemoryQueue, MemoryTx, Statement, Times};

/// Opens the store `name` with `config`.
async fn open(name: &str, config: &TestConfig) -> queue_core::Result<MemoryQueue> {
    MemoryQueue::builder()
        .name(name)
        .claim_strategy(config.claim)
        .retry_policy(config.retry.clone())
        .limits(config.limits.clone())
        .keep_completed_jobs(config.keep_completed)
        .connect()
        .await
}

struct MemoryHarness {
    claim: ClaimStrategy,
}

#[async_trait]
impl Harness for MemoryHarness {
    fn backend(&self) -> &'static str {
        "memory"
    }

    fn claim(&self) -> ClaimStrategy {
        self.claim
    }

    async fn servers(&self) -> Discovery {
        Discovery::Servers(vec![Server::new("in-process store", "")])
    }

    async fn fixture(
        &self,
        _server: &Server,
        config: &TestConfig,
        migrate: bool,
    ) -> anyhow::Result<Box<dyn Fixture>> {
        let name = format!("conformance-{}", uuid::Uuid::new_v4());
        let queue = open(&name, config).await?;
        if migrate {
            queue.migrate().await?;
        }
        Ok(Box::new(MemoryFixture {
            queue,
            name,
            config: config.clone(),
            others: Mutex::default(),
        }))
    }

    async fn unreachable(
        &self,
        _config: &TestConfig,
    ) -> queue_core::Result<Option<Arc<dyn Queue>>> {
        Ok(None)
    }
}

/// A named store of one case, and the queue values on it.
struct MemoryFixture {
    queue: MemoryQueue,
    name: String,
    config: TestConfig,
    others: Mutex<Vec<MemoryQueue>>,
}

#[async_trait]
impl Fixture for MemoryFixture {
    fn queue(&self) -> Arc<dyn Queue> {
        Arc::new(self.queue.clone())
    }

    async fn another(&self) -> anyhow::Result<Arc<dyn Queue>> {
        let q = open(&self.name, &self.config).await?;
        self.others
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(q.clone());
        Ok(Arc::new(q))
    }

    /// The store's one lock, held by a transaction of the test's (every statement waits).
    async fn lock_job(&self, _id: JobId) -> anyhow::Result<Option<Box<dyn HeldLock>>> {
        let tx = self.queue.engine().driver().tx_begin().await?;
        Ok(Some(Box::new(StoreLock(tx))))
    }

    /// The statement that reopens steps fails (for every step: the store has no triggers).
    async fn break_reopen(&self, _id: JobId) -> anyhow::Result<bool> {
        self.queue
            .faults()
            .error(Statement::WorkflowReopen, Times::UntilCleared);
        Ok(true)
    }

    async fn mend(&self) -> anyhow::Result<()> {
        self.queue.faults().clear();
        Ok(())
    }

    /// The store goes with its last queue value.
    async fn teardown(&self) -> anyhow::Result<()> {
        self.others
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        Ok(())
    }
}

/// The store's lock, held by a transaction that changed nothing.
struct StoreLock(MemoryTx);

#[async_trait]
impl HeldLock for StoreLock {
    async fn release(self: Box<Self>) -> anyhow::Result<()> {
        drop(self.0);
        Ok(())
    }
}

/// The error history keeps exactly the newest entries at bounds other than the engine's.
async fn the_error_history_keeps_the_newest_entries(_: Server) -> anyhow::Result<()> {
    let q = MemoryQueue::builder().connect().await?;
    q.migrate().await?;
    conformance_tests::statements::error_history_keeps_the_newest(&q).await
}

fn main() -> ExitCode {
    let harnesses: Vec<Arc<dyn Harness>> = [ClaimStrategy::WriteLock, ClaimStrategy::Optimistic]
        .into_iter()
        .map(|claim| Arc::new(MemoryHarness { claim }) as Arc<dyn Harness>)
        .collect();
    run_suite(
        "memory",
        harnesses,
        dialect_tests![the_error_history_keeps_the_newest_entries],
    )
}
