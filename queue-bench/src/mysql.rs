//! MySQL and MariaDB: our queue under a fresh table prefix per workload, and the hand-written
//! `SELECT ... FOR UPDATE SKIP LOCKED` + `UPDATE` queue in a table of its own.

use sqlx::AssertSqlSafe;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use async_trait::async_trait;
use queue_core::{Limits, Queue};
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::{Executor, Row};

use crate::backend::{fresh_tag, BackendKind, BaselineNs, DrainCheck, HeldHorizon, OursNs, Server};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Rows per client-side insert when seeding the backlog; the rest doubles set-based.
const FILL_SEED: u64 = 1_000;

pub(crate) struct MySqlServer {
    url: String,
    admin: MySqlPool,
}

async fn pool(url: &str, size: u32) -> Result<MySqlPool> {
    let opts: MySqlConnectOptions = url
        .parse()
        .with_context(|| format!("bad URL {}", queue_core::validate::redact_url(url)))?;
    MySqlPoolOptions::new()
        .max_connections(size)
        .acquire_timeout(CONNECT_TIMEOUT)
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                // As the queue does: no gap locks, locks on skipped rows released at once.
                conn.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                    .await?;
                Ok(())
            })
        })
        .connect_with(opts)
        .await
        .with_context(|| format!("connect to {}", queue_core::validate::redact_url(url)))
}

impl MySqlServer {
    pub(crate) async fn connect(url: &str) -> Result<Self> {
        let admin = pool(url, 2).await?;
        sqlx::query("SELECT 1").execute(&admin).await?;
        Ok(MySqlServer {
            url: url.to_owned(),
            admin,
        })
    }
}

/// Drops every table whose name starts with `prefix` (each name re-validated first).
async fn drop_prefixed(admin: &MySqlPool, prefix: &str) -> Result<()> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND LEFT(table_name, ?) = ?",
    )
    .bind(prefix.len() as i64)
    .bind(prefix)
    .fetch_all(admin)
    .await?;
    for name in names {
        queue_core::validate::identifier("table", &name)?;
        sqlx::raw_sql(AssertSqlSafe(format!("DROP TABLE IF EXISTS {name}")))
            .execute(admin)
            .await?;
    }
    Ok(())
}

#[async_trait]
impl Server for MySqlServer {
    fn kind(&self) -> BackendKind {
        BackendKind::Mysql
    }

    async fn describe(&self) -> Result<Vec<(String, String)>> {
        let row = sqlx::query(
            "SELECT CAST(VERSION() AS CHAR), CAST(@@innodb_flush_log_at_trx_commit AS CHAR), \
             CAST(@@sync_binlog AS CHAR), CAST(@@log_bin AS CHAR), \
             CAST(@@innodb_buffer_pool_size AS CHAR), CAST(@@innodb_doublewrite AS CHAR)",
        )
        .fetch_one(&self.admin)
        .await?;
        let mut out = Vec::new();
        for (i, name) in [
            "version",
            "innodb_flush_log_at_trx_commit",
            "sync_binlog",
            "log_bin",
            "innodb_buffer_pool_size",
            "innodb_doublewrite",
        ]
        .iter()
        .enumerate()
        {
            let v: Option<String> = row.try_get(i)?;
            out.push(((*name).into(), v.unwrap_or_else(|| "NULL".into())));
        }
        out.push(("url".into(), queue_core::validate::redact_url(&self.url)));
        Ok(out)
    }

    async fn ours(&self, pool_size: u32) -> Result<Box<dyn OursNs>> {
        let prefix = format!("{}_", fresh_tag("bench_q")?);
        let queue = open_queue(&self.url, &prefix, pool_size, Limits::default()).await?;
        Ok(Box::new(MyOurs {
            table: format!("{prefix}jobs"),
            prefix,
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
        let prefix = format!("{}_", fresh_tag("bench_b")?);
        let t = format!("{prefix}jobs");
        sqlx::raw_sql(AssertSqlSafe(format!(
            "CREATE TABLE {t} (
                 id       BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
                 payload  LONGTEXT    NOT NULL,
                 state    VARCHAR(16) NOT NULL DEFAULT 'pending',
                 attempts INT         NOT NULL DEFAULT 0,
                 KEY pending (state, id)
             ) ENGINE = InnoDB"
        )))
        .execute(&self.admin)
        .await
        .context("create the baseline table")?;
        let pool = pool(&self.url, pool_size).await?;
        Ok(Box::new(MyBaseline {
            select: format!(
                "SELECT id, payload FROM {t} WHERE state = 'pending' ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED"
            ),
            table: t,
            prefix,
            pool,
            admin: self.admin.clone(),
        }))
    }
}

#[cfg(feature = "mysql")]
async fn open_queue(
    url: &str,
    prefix: &str,
    pool_size: u32,
    limits: Limits,
) -> Result<Arc<dyn Queue>> {
    let q = queue_mysql::MySqlQueue::builder(url)
        .table_prefix(prefix)
        .max_connections(pool_size)
        .limits(limits)
        .keep_completed_jobs(crate::backend::keep_completed())
        .connect_timeout(CONNECT_TIMEOUT)
        .connect()
        .await?;
    q.migrate().await?;
    Ok(Arc::new(q))
}

#[cfg(not(feature = "mysql"))]
async fn open_queue(
    _url: &str,
    _prefix: &str,
    _pool_size: u32,
    _limits: Limits,
) -> Result<Arc<dyn Queue>> {
    anyhow::bail!("queue-bench was built without the `mysql` feature")
}

fn placeholders(n: usize) -> String {
    let mut s = String::with_capacity(n * 2);
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push('?');
    }
    s
}

async fn check_counts(admin: &MySqlPool, sql: &str, queue: Option<&str>) -> Result<DrainCheck> {
    let mut q = sqlx::query(AssertSqlSafe(sql.to_owned()));
    if let Some(queue) = queue {
        q = q.bind(queue);
    }
    let row = q.fetch_one(admin).await?;
    let get = |i: usize| -> Result<u64> { Ok(row.try_get::<i64, _>(i)?.max(0) as u64) };
    Ok(DrainCheck {
        total: get(0)?,
        completed: get(1)?,
        not_once: get(2)?,
    })
}

struct MyOurs {
    prefix: String,
    table: String,
    queue: Arc<dyn Queue>,
    admin: MySqlPool,
}

#[async_trait]
impl OursNs for MyOurs {
    fn queue(&self) -> Arc<dyn Queue> {
        self.queue.clone()
    }

    fn namespace(&self) -> String {
        self.prefix.clone()
    }

    async fn check(&self, queue: &str) -> Result<DrainCheck> {
        let t = &self.table;
        check_counts(
            &self.admin,
            &format!(
                "SELECT CAST(COUNT(*) AS SIGNED), CAST(COALESCE(SUM(state = 'completed'), 0) AS SIGNED), \
                 CAST(COALESCE(SUM(state = 'completed' AND attempts <> 1), 0) AS SIGNED) \
                 FROM {t} WHERE queue = ?"
            ),
            Some(queue),
        )
        .await
    }

    async fn fill_finished(&self, queue: &str, rows: u64, payload: &str) -> Result<()> {
        let t = &self.table;
        let cols = "id, queue, payload, priority, state, attempts, max_attempts, run_at, \
                    created_at, updated_at, finished_at";
        let first = rows.min(FILL_SEED) as usize;
        let values = vec![
            "(UNHEX(REPLACE(UUID(), '-', '')), ?, ?, 0, 'completed', 1, 25, \
              NOW(6) - INTERVAL 1 DAY, NOW(6) - INTERVAL 1 DAY, NOW(6) - INTERVAL 1 DAY, \
              NOW(6) - INTERVAL 1 DAY)";
            first
        ]
        .join(",");
        let sql = format!("INSERT INTO {t} ({cols}) VALUES {values}");
        let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
        for _ in 0..first {
            q = q.bind(queue).bind(payload);
        }
        q.execute(&self.admin).await?;
        let mut have = first as u64;
        while have < rows {
            let add = (rows - have).min(have);
            sqlx::query(AssertSqlSafe(format!(
                "INSERT INTO {t} ({cols}) \
                 SELECT UNHEX(REPLACE(UUID(), '-', '')), queue, payload, priority, state, attempts, \
                        max_attempts, run_at, created_at, updated_at, finished_at \
                 FROM {t} WHERE queue = ? AND state = 'completed' LIMIT ?"
            )))
            .bind(queue)
            .bind(add as i64)
            .execute(&self.admin)
            .await?;
            have += add;
        }
        sqlx::raw_sql(AssertSqlSafe(format!("ANALYZE TABLE {t}")))
            .execute(&self.admin)
            .await?;
        Ok(())
    }

    async fn cleanup(&self) -> Result<()> {
        drop_prefixed(&self.admin, &self.prefix).await
    }

    async fn hold_horizon(&self) -> Result<Option<Box<dyn HeldHorizon>>> {
        let mut conn = self.admin.acquire().await?.detach();
        // A consistent snapshot is one of REPEATABLE READ (under READ COMMITTED each statement
        // takes its own).
        sqlx::raw_sql("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut conn)
            .await?;
        sqlx::raw_sql("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            .execute(&mut conn)
            .await?;
        sqlx::raw_sql(AssertSqlSafe(format!(
            "SELECT id FROM {} LIMIT 1",
            self.table
        )))
        .execute(&mut conn)
        .await?;
        Ok(Some(Box::new(MyHorizon {
            conn,
            admin: self.admin.clone(),
        })))
    }
}

struct MyBaseline {
    prefix: String,
    table: String,
    select: String,
    pool: MySqlPool,
    admin: MySqlPool,
}

/// How many times a baseline transaction that InnoDB chose as a deadlock victim (or whose lock
/// wait timed out) is run again, as the MySQL manual asks of every application.
const DEADLOCK_TRIES: u32 = 10;

/// Whether `e` is a deadlock (1213) or a lock wait timeout (1205).
fn is_deadlock(e: &anyhow::Error) -> bool {
    e.downcast_ref::<sqlx::Error>()
        .and_then(|e| match e {
            sqlx::Error::Database(db) => db
                .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
                .map(|m| matches!(m.number(), 1213 | 1205)),
            _ => None,
        })
        .unwrap_or(false)
}

impl MyBaseline {
    /// One claim transaction: the locking read of up to `limit` rows, then their UPDATE.
    async fn claim_once(&self, limit: usize) -> Result<Vec<i64>> {
        let mut tx = self.pool.begin().await?;
        let rows = sqlx::query(AssertSqlSafe(self.select.to_string()))
            .bind(limit as i64)
            .fetch_all(&mut *tx)
            .await?;
        let mut ids = Vec::with_capacity(rows.len());
        for r in &rows {
            let _payload: String = r.try_get(1)?;
            ids.push(r.try_get::<i64, _>(0)?);
        }
        if ids.is_empty() {
            tx.commit().await?;
            return Ok(ids);
        }
        let sql = format!(
            "UPDATE {} SET state = 'running', attempts = attempts + 1 WHERE id IN ({})",
            self.table,
            placeholders(ids.len())
        );
        let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
        for id in &ids {
            q = q.bind(id);
        }
        q.execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(ids)
    }

    /// One completion statement.
    async fn complete_once(&self, ids: &[i64]) -> Result<()> {
        let sql = format!(
            "UPDATE {} SET state = 'done' WHERE id IN ({})",
            self.table,
            placeholders(ids.len())
        );
        let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
        for id in ids {
            q = q.bind(id);
        }
        q.execute(&self.pool).await?;
        Ok(())
    }
}

/// Runs `op` again while InnoDB picks it as a deadlock victim, at most [`DEADLOCK_TRIES`] times.
async fn again_after_deadlock<T, F, Fut>(mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut tries = 0;
    loop {
        match op().await {
            Err(e) if tries < DEADLOCK_TRIES && is_deadlock(&e) => tries += 1,
            other => return other,
        }
    }
}

#[async_trait]
impl BaselineNs for MyBaseline {
    async fn insert_one(&self, payload: &str) -> Result<()> {
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {} (payload) VALUES (?)",
            self.table
        )))
        .bind(payload)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn insert_many(&self, payloads: &[String]) -> Result<()> {
        let values = vec!["(?)"; payloads.len()].join(",");
        let sql = format!("INSERT INTO {} (payload) VALUES {values}", self.table);
        let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
        for p in payloads {
            q = q.bind(p);
        }
        q.execute(&self.pool).await?;
        Ok(())
    }

    async fn claim(&self, limit: usize) -> Result<Vec<i64>> {
        again_after_deadlock(|| self.claim_once(limit)).await
    }

    async fn complete(&self, ids: &[i64]) -> Result<()> {
        again_after_deadlock(|| self.complete_once(ids)).await
    }

    async fn check(&self) -> Result<DrainCheck> {
        check_counts(
            &self.admin,
            &format!(
                "SELECT CAST(COUNT(*) AS SIGNED), CAST(COALESCE(SUM(state = 'done'), 0) AS SIGNED), \
                 CAST(COALESCE(SUM(state = 'done' AND attempts <> 1), 0) AS SIGNED) FROM {}",
                self.table
            ),
            None,
        )
        .await
    }

    async fn cleanup(&self) -> Result<()> {
        self.pool.close().await;
        drop_prefixed(&self.admin, &self.prefix).await
    }
}

/// A transaction with a consistent snapshot on a connection of its own, which has read a row.
struct MyHorizon {
    conn: sqlx::MySqlConnection,
    admin: MySqlPool,
}

#[async_trait]
impl HeldHorizon for MyHorizon {
    async fn unremovable(&mut self) -> Result<String> {
        let len: i64 = sqlx::query_scalar(
            "SELECT CAST(`COUNT` AS SIGNED) FROM information_schema.INNODB_METRICS \
             WHERE NAME = 'trx_rseg_history_len'",
        )
        .fetch_one(&self.admin)
        .await?;
        Ok(format!(
            "a history list of {len} undo log entries that purge could not remove with the snapshot held"
        ))
    }

    async fn release(mut self: Box<Self>) -> Result<()> {
        sqlx::raw_sql("ROLLBACK").execute(&mut self.conn).await?;
        Ok(())
    }
}
