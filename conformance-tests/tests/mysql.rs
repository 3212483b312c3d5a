//! The conformance suite on MySQL and MariaDB: a fresh table prefix `t<random>_` per test, its
//! tables dropped at the end, with both claim strategies and 32 concurrent poppers.
#![cfg(feature = "mysql")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use conformance_tests::servers::random_suffix;
use conformance_tests::{Discovery, Fixture, Harness, Server, TestConfig, Transactions};
use queue_core::{ClaimStrategy, JobId, Lease, NewJob, Queue};
use queue_mysql::MySqlQueue;

struct MySqlHarness(ClaimStrategy);

async fn connect(url: &str, prefix: &str, config: &TestConfig) -> queue_core::Result<MySqlQueue> {
    MySqlQueue::builder(url)
        .table_prefix(prefix)
        .claim_strategy(config.claim)
        .retry_policy(config.retry.clone())
        .limits(config.limits.clone())
        .max_connections(24)
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
}

#[async_trait]
impl Harness for MySqlHarness {
    fn backend(&self) -> &'static str {
        "mysql"
    }

    fn claim(&self) -> ClaimStrategy {
        self.0
    }

    fn poppers(&self) -> usize {
        32
    }

    async fn servers(&self) -> Discovery {
        conformance_tests::servers::mysql().await
    }

    async fn fixture(
        &self,
        server: &Server,
        config: &TestConfig,
        migrate: bool,
    ) -> anyhow::Result<Box<dyn Fixture>> {
        let prefix = format!("t{}_", random_suffix());
        let queue = connect(&server.url, &prefix, config).await?;
        let fx = MySqlFixture {
            queue,
            url: server.url.clone(),
            prefix,
            config: config.clone(),
            others: Mutex::default(),
        };
        if migrate {
            fx.queue.migrate().await?;
            // `prefix` is a plain identifier made above: `t`, hex digits and `_`.
            sqlx::query(&format!(
                "CREATE TABLE {}effects (marker TEXT NOT NULL)",
                fx.prefix
            ))
            .execute(fx.queue.pool())
            .await?;
        }
        Ok(Box::new(fx))
    }

    async fn unreachable(&self, config: &TestConfig) -> queue_core::Result<Arc<dyn Queue>> {
        let q = MySqlQueue::builder("mysql://root:secret@127.0.0.1:1/test")
            .claim_strategy(config.claim)
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await?;
        Ok(Arc::new(q))
    }
}

struct MySqlFixture {
    queue: MySqlQueue,
    url: String,
    prefix: String,
    config: TestConfig,
    others: Mutex<Vec<MySqlQueue>>,
}

#[async_trait]
impl Fixture for MySqlFixture {
    fn queue(&self) -> Arc<dyn Queue> {
        Arc::new(self.queue.clone())
    }

    async fn another(&self) -> anyhow::Result<Arc<dyn Queue>> {
        let q = connect(&self.url, &self.prefix, &self.config).await?;
        self.others.lock().unwrap().push(q.clone());
        Ok(Arc::new(q))
    }

    fn transactions(&self) -> Option<&dyn Transactions> {
        Some(self)
    }

    async fn teardown(&self) -> anyhow::Result<()> {
        let others = std::mem::take(&mut *self.others.lock().unwrap());
        for q in others {
            q.pool().close().await;
        }
        self.queue.drop_tables().await?;
        sqlx::query(&format!("DROP TABLE IF EXISTS {}effects", self.prefix))
            .execute(self.queue.pool())
            .await?;
        self.queue.pool().close().await;
        Ok(())
    }
}

#[async_trait]
impl Transactions for MySqlFixture {
    async fn push_in_tx(
        &self,
        job: NewJob,
        marker: &str,
        commit: bool,
    ) -> queue_core::Result<JobId> {
        let mut tx = self
            .queue
            .pool()
            .begin()
            .await
            .map_err(queue_core::Error::database)?;
        sqlx::query(&format!(
            "INSERT INTO {}effects (marker) VALUES (?)",
            self.prefix
        ))
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
        let mut tx = self
            .queue
            .pool()
            .begin()
            .await
            .map_err(queue_core::Error::database)?;
        sqlx::query(&format!(
            "INSERT INTO {}effects (marker) VALUES (?)",
            self.prefix
        ))
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
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {}effects WHERE marker = ?",
            self.prefix
        ))
        .bind(marker)
        .fetch_one(self.queue.pool())
        .await?;
        Ok(n as u64)
    }
}

mod mysql {
    use super::*;

    conformance_tests::suite!(skip_locked, MySqlHarness(ClaimStrategy::SkipLocked));
    conformance_tests::suite!(optimistic, MySqlHarness(ClaimStrategy::Optimistic));
}
