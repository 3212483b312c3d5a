//! The conformance suite on SQLite: a fresh temporary database file per test, with both claim
//! strategies.
#![cfg(feature = "sqlite")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use conformance_tests::{Discovery, Fixture, Harness, Server, TestConfig, Transactions};
use queue_core::{ClaimStrategy, JobId, Lease, NewJob, Queue};
use queue_sqlite::SqliteQueue;

struct SqliteHarness(ClaimStrategy);

async fn connect(path: &str, config: &TestConfig) -> queue_core::Result<SqliteQueue> {
    SqliteQueue::builder(path)
        .claim_strategy(config.claim)
        .retry_policy(config.retry.clone())
        .limits(config.limits.clone())
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
}

#[async_trait]
impl Harness for SqliteHarness {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn claim(&self) -> ClaimStrategy {
        self.0
    }

    async fn servers(&self) -> Discovery {
        Discovery::Servers(vec![Server {
            label: "temporary file".into(),
            url: String::new(),
        }])
    }

    async fn fixture(
        &self,
        _server: &Server,
        config: &TestConfig,
        migrate: bool,
    ) -> anyhow::Result<Box<dyn Fixture>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("queue.db").to_string_lossy().into_owned();
        let queue = connect(&path, config).await?;
        if migrate {
            queue.migrate().await?;
            sqlx::query("CREATE TABLE effects (marker TEXT NOT NULL)")
                .execute(queue.writer_pool())
                .await?;
        }
        Ok(Box::new(SqliteFixture {
            queue,
            path,
            config: config.clone(),
            others: Mutex::default(),
            dir: Mutex::new(Some(dir)),
        }))
    }

    async fn unreachable(&self, config: &TestConfig) -> queue_core::Result<Arc<dyn Queue>> {
        let q = connect(
            "/nonexistent-directory-for-queue-tests/sub/queue.db",
            config,
        )
        .await?;
        Ok(Arc::new(q))
    }
}

struct SqliteFixture {
    queue: SqliteQueue,
    path: String,
    config: TestConfig,
    others: Mutex<Vec<SqliteQueue>>,
    dir: Mutex<Option<tempfile::TempDir>>,
}

#[async_trait]
impl Fixture for SqliteFixture {
    fn queue(&self) -> Arc<dyn Queue> {
        Arc::new(self.queue.clone())
    }

    async fn another(&self) -> anyhow::Result<Arc<dyn Queue>> {
        let q = connect(&self.path, &self.config).await?;
        self.others.lock().unwrap().push(q.clone());
        Ok(Arc::new(q))
    }

    fn transactions(&self) -> Option<&dyn Transactions> {
        Some(self)
    }

    async fn teardown(&self) -> anyhow::Result<()> {
        let others = std::mem::take(&mut *self.others.lock().unwrap());
        for q in others {
            q.close().await;
        }
        self.queue.close().await;
        if let Some(dir) = self.dir.lock().unwrap().take() {
            dir.close()?;
        }
        Ok(())
    }
}

#[async_trait]
impl Transactions for SqliteFixture {
    async fn push_in_tx(
        &self,
        job: NewJob,
        marker: &str,
        commit: bool,
    ) -> queue_core::Result<JobId> {
        let mut tx = self.queue.begin().await?;
        sqlx::query("INSERT INTO effects (marker) VALUES (?)")
            .bind(marker)
            .execute(&mut *tx)
            .await
            .map_err(queue_core::Error::database)?;
        let id = self.queue.push_in_tx(&mut tx, job).await?;
        if commit {
            tx.commit().await.map_err(queue_core::Error::database)?;
        } else {
            tx.rollback().await.map_err(queue_core::Error::database)?;
        }
        Ok(id)
    }

    async fn complete_in_tx(&self, lease: &Lease, marker: &str) -> queue_core::Result<()> {
        let mut tx = self.queue.begin().await?;
        sqlx::query("INSERT INTO effects (marker) VALUES (?)")
            .bind(marker)
            .execute(&mut *tx)
            .await
            .map_err(queue_core::Error::database)?;
        match self.queue.complete_in_tx(&mut tx, lease).await {
            Ok(()) => tx.commit().await.map_err(queue_core::Error::database),
            Err(e) => {
                tx.rollback().await.map_err(queue_core::Error::database)?;
                Err(e)
            }
        }
    }

    async fn effects(&self, marker: &str) -> anyhow::Result<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM effects WHERE marker = ?")
            .bind(marker)
            .fetch_one(self.queue.writer_pool())
            .await?;
        Ok(n as u64)
    }
}

mod sqlite {
    use super::*;

    conformance_tests::suite!(write_lock, SqliteHarness(ClaimStrategy::WriteLock));
    conformance_tests::suite!(optimistic, SqliteHarness(ClaimStrategy::Optimistic));
}
