//! PostgreSQL: our queue in a fresh schema per workload, and the hand-written
//! `FOR UPDATE SKIP LOCKED` queue in another.

use sqlx::AssertSqlSafe;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use async_trait::async_trait;
use queue_core::{Limits, Queue};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::Row;

use crate::backend::{
    fresh_tag, BackendKind, BaselineNs, DrainCheck, HeldHorizon, OursNs, Server, DAY,
};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) struct PgServer {
    url: String,
    admin: PgPool,
}

async fn pool(url: &str, size: u32) -> Result<PgPool> {
    let opts: PgConnectOptions = url
        .parse()
        .with_context(|| format!("bad URL {}", queue_core::validate::redact_url(url)))?;
    PgPoolOptions::new()
        .max_connections(size)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect_with(opts)
        .await
        .with_context(|| format!("connect to {}", queue_core::validate::redact_url(url)))
}

impl PgServer {
    pub(crate) async fn connect(url: &str) -> Result<Self> {
        let admin = pool(url, 2).await?;
        sqlx::query("SELECT 1").execute(&admin).await?;
        Ok(PgServer {
            url: url.to_owned(),
            admin,
        })
    }
}

#[async_trait]
impl Server for PgServer {
    fn kind(&self) -> BackendKind {
        BackendKind::Postgres
    }

    async fn describe(&self) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        let v: String = sqlx::query_scalar("SELECT version()")
            .fetch_one(&self.admin)
            .await?;
        out.push(("version".into(), v));
        for name in [
            "synchronous_commit",
            "fsync",
            "wal_level",
            "shared_buffers",
            "max_connections",
            // Off on some test servers: a run that keeps completed jobs then leaves every dead
            // row version in place, and the sustained workload measures a growing table.
            "autovacuum",
        ] {
            let v: String = sqlx::query_scalar("SELECT current_setting($1)")
                .bind(name)
                .fetch_one(&self.admin)
                .await?;
            out.push((name.into(), v));
        }
        out.push(("url".into(), queue_core::validate::redact_url(&self.url)));
        Ok(out)
    }

    async fn ours(&self, pool_size: u32) -> Result<Box<dyn OursNs>> {
        let schema = fresh_tag("bench_q")?;
        let queue = open_queue(&self.url, &schema, pool_size, Limits::default()).await?;
        Ok(Box::new(PgOurs {
            schema,
            queue,
            admin: self.admin.clone(),
        }))
    }

    async fn attach_with(
        &self,
        namespace: &str,
        pool_size: u32,
        limits: Limits,
    ) -> Result<Arc<dyn Queue>> {
        open_queue(&self.url, namespace, pool_size, limits).await
    }

    async fn baseline(&self, pool_size: u32) -> Result<Box<dyn BaselineNs>> {
        let schema = fresh_tag("bench_b")?;
        sqlx::raw_sql(AssertSqlSafe(format!(
            "CREATE SCHEMA {schema};
             CREATE TABLE {schema}.jobs (
                 id       bigserial PRIMARY KEY,
                 payload  jsonb     NOT NULL,
                 state    text      NOT NULL DEFAULT 'pending',
                 attempts integer   NOT NULL DEFAULT 0
             );
             CREATE INDEX jobs_pending ON {schema}.jobs (id) WHERE state = 'pending';"
        )))
        .execute(&self.admin)
        .await
        .context("create the baseline table")?;
        let pool = pool(&self.url, pool_size).await?;
        Ok(Box::new(PgBaseline {
            claim: format!(
                "WITH c AS (SELECT id FROM {schema}.jobs WHERE state = 'pending' ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) \
                 UPDATE {schema}.jobs t SET state = 'running', attempts = t.attempts + 1 FROM c WHERE t.id = c.id \
                 RETURNING t.id, t.payload"
            ),
            complete_one: format!("UPDATE {schema}.jobs SET state = 'done' WHERE id = $1"),
            complete_many: format!("UPDATE {schema}.jobs SET state = 'done' WHERE id = ANY($1)"),
            insert_one: format!("INSERT INTO {schema}.jobs (payload) VALUES ($1::jsonb)"),
            insert_many: format!(
                "INSERT INTO {schema}.jobs (payload) SELECT p FROM UNNEST($1::jsonb[]) AS u (p)"
            ),
            check: format!(
                "SELECT count(*), count(*) FILTER (WHERE state = 'done'), \
                 count(*) FILTER (WHERE state = 'done' AND attempts <> 1) FROM {schema}.jobs"
            ),
            schema,
            pool,
            admin: self.admin.clone(),
        }))
    }
}

#[cfg(feature = "postgres")]
async fn open_queue(
    url: &str,
    schema: &str,
    pool_size: u32,
    limits: Limits,
) -> Result<Arc<dyn Queue>> {
    let q = queue_postgres::PostgresQueue::builder(url)
        .schema(schema)
        .max_connections(pool_size)
        .limits(limits)
        .keep_completed_jobs(crate::backend::keep_completed())
        .connect_timeout(CONNECT_TIMEOUT);
    let q = match crate::backend::finished_partitions() {
        Some(every) => q.finished_partitions(every),
        None => q,
    };
    let q = q.connect().await?;
    q.migrate().await?;
    Ok(Arc::new(q))
}

#[cfg(not(feature = "postgres"))]
async fn open_queue(
    _url: &str,
    _schema: &str,
    _pool_size: u32,
    _limits: Limits,
) -> Result<Arc<dyn Queue>> {
    anyhow::bail!("queue-bench was built without the `postgres` feature")
}

struct PgOurs {
    schema: String,
    queue: Arc<dyn Queue>,
    admin: PgPool,
}

#[async_trait]
impl OursNs for PgOurs {
    fn queue(&self) -> Arc<dyn Queue> {
        self.queue.clone()
    }

    fn namespace(&self) -> String {
        self.schema.clone()
    }

    async fn check(&self, queue: &str) -> Result<DrainCheck> {
        let s = &self.schema;
        let row = sqlx::query(AssertSqlSafe(format!(
            "SELECT count(*), count(*) FILTER (WHERE state = 'completed'), \
             count(*) FILTER (WHERE state = 'completed' AND attempts <> 1) \
             FROM {s}.jobs_all WHERE queue = $1"
        )))
        .bind(queue)
        .fetch_one(&self.admin)
        .await?;
        Ok(DrainCheck {
            total: row.try_get::<i64, _>(0)? as u64,
            completed: row.try_get::<i64, _>(1)? as u64,
            not_once: row.try_get::<i64, _>(2)? as u64,
        })
    }

    async fn fill_finished(&self, queue: &str, rows: u64, payload: &str) -> Result<()> {
        self.fill_history(queue, rows, payload, DAY, Duration::ZERO)
            .await
            .map(|_| ())
    }

    async fn fill_history(
        &self,
        queue: &str,
        rows: u64,
        payload: &str,
        newest: Duration,
        span: Duration,
    ) -> Result<bool> {
        let s = &self.schema;
        // With finished partitions the history goes where completions would have put it: the
        // partitions of its days (made for the occasion, as the days would have), in jobs_done.
        let table = if crate::backend::finished_partitions().is_some() {
            sqlx::query(AssertSqlSafe(format!(
                "SELECT {s}.finished_partitions_ensure(now() - make_interval(secs => $1), \
                 ARRAY['completed'])"
            )))
            .bind((newest + span).as_secs_f64() + 1.0)
            .execute(&self.admin)
            .await?;
            "jobs_done"
        } else {
            "jobs"
        };
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {s}.{table} (id, queue, payload, priority, state, attempts, max_attempts, \
                 run_at, created_at, updated_at, finished_at) \
             SELECT gen_random_uuid(), $1, $2::jsonb, 0, 'completed', 1, 25, t, t, t, t \
             FROM (SELECT now() - make_interval(secs => $4 + $5 * g / $3) AS t \
                   FROM generate_series(1, $3::bigint) AS g) AS times"
        )))
        .bind(queue)
        .bind(payload)
        .bind(rows as i64)
        .bind(newest.as_secs_f64())
        .bind(span.as_secs_f64())
        .execute(&self.admin)
        .await?;
        // What autovacuum would have done while this history accumulated.
        sqlx::raw_sql(AssertSqlSafe(format!("VACUUM ANALYZE {s}.{table}")))
            .execute(&self.admin)
            .await?;
        Ok(true)
    }

    async fn cleanup(&self) -> Result<()> {
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            self.schema
        )))
        .execute(&self.admin)
        .await?;
        Ok(())
    }

    async fn hold_horizon(&self) -> Result<Option<Box<dyn HeldHorizon>>> {
        let mut conn = self.admin.acquire().await?.detach();
        sqlx::raw_sql("BEGIN ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut conn)
            .await?;
        sqlx::raw_sql(AssertSqlSafe(format!(
            "SELECT id FROM {}.jobs LIMIT 1",
            self.schema
        )))
        .execute(&mut conn)
        .await?;
        Ok(Some(Box::new(PgHorizon {
            conn,
            schema: self.schema.clone(),
            admin: self.admin.clone(),
        })))
    }
}

/// A `REPEATABLE READ` transaction on a connection of its own, which has read a row.
struct PgHorizon {
    conn: sqlx::PgConnection,
    schema: String,
    admin: PgPool,
}

#[async_trait]
impl HeldHorizon for PgHorizon {
    async fn unremovable(&mut self) -> Result<String> {
        sqlx::raw_sql(AssertSqlSafe(format!("VACUUM {}.jobs", self.schema)))
            .execute(&self.admin)
            .await?;
        let dead: i64 = sqlx::query_scalar(
            "SELECT coalesce(sum(n_dead_tup), 0)::bigint FROM pg_stat_user_tables \
             WHERE schemaname = $1 AND relname = 'jobs'",
        )
        .bind(&self.schema)
        .fetch_one(&self.admin)
        .await?;
        Ok(format!(
            "{dead} dead row versions that VACUUM could not remove with the snapshot held"
        ))
    }

    async fn release(mut self: Box<Self>) -> Result<()> {
        sqlx::raw_sql("ROLLBACK").execute(&mut self.conn).await?;
        Ok(())
    }
}

struct PgBaseline {
    schema: String,
    pool: PgPool,
    admin: PgPool,
    claim: String,
    complete_one: String,
    complete_many: String,
    insert_one: String,
    insert_many: String,
    check: String,
}

#[async_trait]
impl BaselineNs for PgBaseline {
    async fn insert_one(&self, payload: &str) -> Result<()> {
        sqlx::query(AssertSqlSafe(self.insert_one.to_string()))
            .bind(payload)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn insert_many(&self, payloads: &[String]) -> Result<()> {
        sqlx::query(AssertSqlSafe(self.insert_many.to_string()))
            .bind(payloads)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn claim(&self, limit: usize) -> Result<Vec<i64>> {
        let rows = sqlx::query(AssertSqlSafe(self.claim.to_string()))
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                // The payload comes back as a handler would need it.
                let _payload: sqlx::types::Json<Box<serde_json::value::RawValue>> = r.try_get(1)?;
                Ok(r.try_get::<i64, _>(0)?)
            })
            .collect()
    }

    async fn complete(&self, ids: &[i64]) -> Result<()> {
        if let [id] = ids {
            sqlx::query(AssertSqlSafe(self.complete_one.to_string()))
                .bind(id)
                .execute(&self.pool)
                .await?;
        } else {
            sqlx::query(AssertSqlSafe(self.complete_many.to_string()))
                .bind(ids)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    async fn check(&self) -> Result<DrainCheck> {
        let row = sqlx::query(AssertSqlSafe(self.check.to_string()))
            .fetch_one(&self.admin)
            .await?;
        Ok(DrainCheck {
            total: row.try_get::<i64, _>(0)? as u64,
            completed: row.try_get::<i64, _>(1)? as u64,
            not_once: row.try_get::<i64, _>(2)? as u64,
        })
    }

    async fn cleanup(&self) -> Result<()> {
        self.pool.close().await;
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            self.schema
        )))
        .execute(&self.admin)
        .await?;
        Ok(())
    }
}
