//! The conformance suite on PostgreSQL: a fresh schema `t_<random>` per test, dropped at the
//! end, with both claim strategies.
#![cfg(feature = "postgres")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use conformance_tests::servers::random_suffix;
use conformance_tests::{Discovery, Fixture, Harness, Server, TestConfig, Transactions};
use queue_core::{ClaimStrategy, JobId, Lease, NewJob, Queue};
use queue_postgres::PostgresQueue;

struct PostgresHarness(ClaimStrategy);

async fn connect(
    url: &str,
    schema: &str,
    config: &TestConfig,
) -> queue_core::Result<PostgresQueue> {
    PostgresQueue::builder(url)
        .schema(schema)
        .claim_strategy(config.claim)
        .retry_policy(config.retry.clone())
        .limits(config.limits.clone())
        .max_connections(24)
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
}

#[async_trait]
impl Harness for PostgresHarness {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn claim(&self) -> ClaimStrategy {
        self.0
    }

    async fn servers(&self) -> Discovery {
        conformance_tests::servers::postgres().await
    }

    async fn fixture(
        &self,
        server: &Server,
        config: &TestConfig,
        migrate: bool,
    ) -> anyhow::Result<Box<dyn Fixture>> {
        let schema = format!("t_{}", random_suffix());
        let queue = connect(&server.url, &schema, config).await?;
        let fx = PostgresFixture {
            queue,
            url: server.url.clone(),
            schema,
            config: config.clone(),
            others: Mutex::default(),
        };
        if migrate {
            fx.queue.migrate().await?;
            // `schema` is a plain identifier made above: `t_` and hex digits.
            sqlx::query(&format!(
                "CREATE TABLE {}.effects (marker TEXT NOT NULL)",
                fx.schema
            ))
            .execute(fx.queue.pool())
            .await?;
        }
        Ok(Box::new(fx))
    }

    async fn unreachable(&self, config: &TestConfig) -> queue_core::Result<Arc<dyn Queue>> {
        let q = PostgresQueue::builder("postgres://postgres:secret@127.0.0.1:1/test")
            .claim_strategy(config.claim)
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await?;
        Ok(Arc::new(q))
    }
}

struct PostgresFixture {
    queue: PostgresQueue,
    url: String,
    schema: String,
    config: TestConfig,
    others: Mutex<Vec<PostgresQueue>>,
}

#[async_trait]
impl Fixture for PostgresFixture {
    fn queue(&self) -> Arc<dyn Queue> {
        Arc::new(self.queue.clone())
    }

    async fn another(&self) -> anyhow::Result<Arc<dyn Queue>> {
        let q = connect(&self.url, &self.schema, &self.config).await?;
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
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema))
            .execute(self.queue.pool())
            .await?;
        self.queue.pool().close().await;
        Ok(())
    }
}

#[async_trait]
impl Transactions for PostgresFixture {
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
            "INSERT INTO {}.effects (marker) VALUES ($1)",
            self.schema
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
            "INSERT INTO {}.effects (marker) VALUES ($1)",
            self.schema
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
            "SELECT COUNT(*) FROM {}.effects WHERE marker = $1",
            self.schema
        ))
        .bind(marker)
        .fetch_one(self.queue.pool())
        .await?;
        Ok(n as u64)
    }
}

mod postgres {
    use super::*;

    conformance_tests::suite!(skip_locked, PostgresHarness(ClaimStrategy::SkipLocked));
    conformance_tests::suite!(optimistic, PostgresHarness(ClaimStrategy::Optimistic));
}
