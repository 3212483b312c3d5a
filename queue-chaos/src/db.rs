//! The database under test: one queue of a backend, opened in its own namespace, plus the
//! effects table that handlers write in the same transaction as their job's completion.
//!
//! Every value is bound. The only text spliced into statements is the namespace (a PostgreSQL
//! schema or a MySQL table prefix), checked with `queue_core::validate::identifier` first.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use dbqueue::{ClaimStrategy, Error, Lease, MySqlQueue, PostgresQueue, Queue, SqliteQueue};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sqlx::Connection;

/// Which backend a target runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// SQLite: a file of its own per scenario run.
    Sqlite,
    /// PostgreSQL: a schema of its own per scenario run.
    Postgres,
    /// MySQL or MariaDB: a table prefix of its own per scenario run.
    Mysql,
}

impl Kind {
    /// The name `QUEUE_TEST_REQUIRE` uses.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
            Kind::Mysql => "mysql",
        }
    }

    /// The claim strategies this backend can run.
    pub(crate) fn strategies(self) -> &'static [ClaimStrategy] {
        match self {
            Kind::Sqlite => &[ClaimStrategy::WriteLock, ClaimStrategy::Optimistic],
            Kind::Postgres | Kind::Mysql => &[ClaimStrategy::SkipLocked, ClaimStrategy::Optimistic],
        }
    }
}

/// Parses a claim strategy by its short name.
pub(crate) fn parse_strategy(s: &str) -> anyhow::Result<ClaimStrategy> {
    Ok(match s {
        "skip_locked" => ClaimStrategy::SkipLocked,
        "write_lock" => ClaimStrategy::WriteLock,
        "optimistic" => ClaimStrategy::Optimistic,
        other => bail!("unknown claim strategy {other:?} (skip_locked, write_lock, optimistic)"),
    })
}

/// Everything a process needs to open the queue under test; passed to worker processes as
/// one JSON argument.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Target {
    /// The backend.
    pub(crate) kind: Kind,
    /// The database URL (for SQLite, the file).
    pub(crate) url: String,
    /// The namespace: PostgreSQL schema, MySQL table prefix stem; for SQLite only a label.
    pub(crate) ns: String,
    /// The claim strategy, by name.
    pub(crate) strategy: String,
    /// Pool size of each process.
    pub(crate) max_connections: u32,
    /// How long a process waits for a pooled connection.
    pub(crate) connect_timeout_ms: u64,
}

impl Target {
    pub(crate) fn claim(&self) -> anyhow::Result<ClaimStrategy> {
        parse_strategy(&self.strategy)
    }
}

/// One row of the effects table: the record of one completed execution.
#[derive(Clone, Debug)]
pub(crate) struct Effect {
    pub(crate) attempt: u32,
    pub(crate) process: String,
    pub(crate) started_us: i64,
}

/// The queue under test, through its concrete backend type (for the transaction methods).
#[derive(Clone)]
pub(crate) enum Db {
    Sqlite(SqliteQueue),
    Postgres(PostgresQueue),
    Mysql(MySqlQueue),
}

/// A statement that carries the validated namespace, built once. Leaked so that it is a
/// `&'static str`, the form every sqlx version accepts as statement text; a run builds a handful.
fn namespaced(template: &str, ns: &str) -> anyhow::Result<&'static str> {
    dbqueue::validate::identifier("namespace", ns)?;
    Ok(Box::leak(template.replace("{ns}", ns).into_boxed_str()))
}

impl Db {
    /// Opens the target's queue; does not migrate.
    pub(crate) async fn connect(t: &Target) -> anyhow::Result<Db> {
        let claim = t.claim()?;
        let timeout = Duration::from_millis(t.connect_timeout_ms);
        let policy = dbqueue::RetryPolicy {
            base: Duration::from_millis(50),
            max: Duration::from_secs(1),
            ..dbqueue::RetryPolicy::default()
        };
        Ok(match t.kind {
            Kind::Sqlite => Db::Sqlite(
                SqliteQueue::builder(t.url.clone())
                    .claim_strategy(claim)
                    .retry_policy(policy)
                    .max_connections(t.max_connections)
                    .connect_timeout(timeout)
                    .connect()
                    .await?,
            ),
            Kind::Postgres => Db::Postgres(
                PostgresQueue::builder(t.url.clone())
                    .schema(t.ns.clone())
                    .claim_strategy(claim)
                    .retry_policy(policy)
                    .max_connections(t.max_connections)
                    .connect_timeout(timeout)
                    .connect()
                    .await?,
            ),
            Kind::Mysql => Db::Mysql(
                MySqlQueue::builder(t.url.clone())
                    .table_prefix(format!("{}_", t.ns))
                    .claim_strategy(claim)
                    .retry_policy(policy)
                    .max_connections(t.max_connections)
                    .connect_timeout(timeout)
                    .connect()
                    .await?,
            ),
        })
    }

    /// The queue, through the trait users call.
    pub(crate) fn queue(&self) -> Arc<dyn Queue> {
        match self {
            Db::Sqlite(q) => Arc::new(q.clone()),
            Db::Postgres(q) => Arc::new(q.clone()),
            Db::Mysql(q) => Arc::new(q.clone()),
        }
    }

    /// Creates the effects table (shared by runs, rows keyed by namespace). It has no unique
    /// key on the job on purpose: a second effect of one job must be stored, so it is seen.
    pub(crate) async fn create_effects_table(&self) -> anyhow::Result<()> {
        match self {
            Db::Sqlite(q) => {
                let pool = q.writer_pool();
                sqlx::query(
                    "CREATE TABLE IF NOT EXISTS chaos_effects (ns TEXT NOT NULL, job_id TEXT NOT NULL, \
                     attempt INTEGER NOT NULL, token TEXT NOT NULL, process TEXT NOT NULL, \
                     started_us INTEGER NOT NULL, ended_us INTEGER NOT NULL)",
                )
                .execute(pool)
                .await?;
                sqlx::query(
                    "CREATE INDEX IF NOT EXISTS chaos_effects_ns ON chaos_effects (ns, job_id)",
                )
                .execute(pool)
                .await?;
            }
            Db::Postgres(q) => {
                let pool = q.pool();
                // Concurrent runs may race to create it; the loser's error is harmless.
                let _ = sqlx::query(
                    "CREATE TABLE IF NOT EXISTS chaos_effects (ns TEXT NOT NULL, job_id TEXT NOT NULL, \
                     attempt INT NOT NULL, token TEXT NOT NULL, process TEXT NOT NULL, \
                     started_us BIGINT NOT NULL, ended_us BIGINT NOT NULL)",
                )
                .execute(pool)
                .await;
                let _ = sqlx::query(
                    "CREATE INDEX IF NOT EXISTS chaos_effects_ns ON chaos_effects (ns, job_id)",
                )
                .execute(pool)
                .await;
                sqlx::query("SELECT 1 FROM chaos_effects LIMIT 1")
                    .fetch_optional(pool)
                    .await
                    .context("the effects table chaos_effects")?;
            }
            Db::Mysql(q) => {
                sqlx::query(
                    "CREATE TABLE IF NOT EXISTS chaos_effects (ns VARCHAR(64) NOT NULL, \
                     job_id CHAR(36) NOT NULL, attempt INT NOT NULL, token CHAR(36) NOT NULL, \
                     process VARCHAR(64) NOT NULL, started_us BIGINT NOT NULL, \
                     ended_us BIGINT NOT NULL, KEY chaos_effects_ns (ns, job_id)) ENGINE=InnoDB",
                )
                .execute(q.pool())
                .await?;
            }
        }
        Ok(())
    }

    /// Records the effect of one execution and completes its job in one transaction, so the
    /// effect exists exactly when the job completed; `output`, if any, is stored as the job's
    /// output with the completion. `hold` keeps the transaction open (with the job's row, or
    /// SQLite's write lock, held) before the commit; `in_tx` is told when the transaction
    /// opens and closes.
    pub(crate) async fn complete_with_effect(
        &self,
        ns: &str,
        lease: &Lease,
        effect: &Effect,
        output: Option<&RawValue>,
        hold: Duration,
        in_tx: &(dyn Fn(bool) + Send + Sync),
    ) -> dbqueue::Result<()> {
        let job = lease.job_id.to_string();
        let token = lease.token.to_string();
        let ended = now_us();
        match self {
            Db::Sqlite(q) => {
                let mut tx = q.begin().await?;
                in_tx(true);
                let r = async {
                    sqlx::query(
                        "INSERT INTO chaos_effects (ns, job_id, attempt, token, process, started_us, ended_us) \
                         VALUES (?, ?, ?, ?, ?, ?, ?)",
                    )
                    .bind(ns)
                    .bind(&job)
                    .bind(i64::from(effect.attempt))
                    .bind(&token)
                    .bind(&effect.process)
                    .bind(effect.started_us)
                    .bind(ended)
                    .execute(&mut *tx)
                    .await
                    .map_err(Error::database)?;
                    match output {
                        Some(o) => q.complete_in_tx_with_output(&mut tx, lease, o).await?,
                        None => q.complete_in_tx(&mut tx, lease).await?,
                    }
                    tokio::time::sleep(hold).await;
                    tx.commit().await.map_err(Error::database)
                }
                .await;
                in_tx(false);
                r
            }
            Db::Postgres(q) => {
                let mut tx = q.pool().begin().await.map_err(Error::unavailable)?;
                in_tx(true);
                let r = async {
                    sqlx::query(
                        "INSERT INTO chaos_effects (ns, job_id, attempt, token, process, started_us, ended_us) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(ns)
                    .bind(&job)
                    .bind(effect.attempt as i32)
                    .bind(&token)
                    .bind(&effect.process)
                    .bind(effect.started_us)
                    .bind(ended)
                    .execute(&mut *tx)
                    .await
                    .map_err(Error::database)?;
                    match output {
                        Some(o) => q.complete_in_tx_with_output(&mut tx, lease, o).await?,
                        None => q.complete_in_tx(&mut tx, lease).await?,
                    }
                    tokio::time::sleep(hold).await;
                    tx.commit().await.map_err(Error::database)
                }
                .await;
                in_tx(false);
                r
            }
            Db::Mysql(q) => {
                let mut tx = q.pool().begin().await.map_err(Error::unavailable)?;
                in_tx(true);
                let r = async {
                    sqlx::query(
                        "INSERT INTO chaos_effects (ns, job_id, attempt, token, process, started_us, ended_us) \
                         VALUES (?, ?, ?, ?, ?, ?, ?)",
                    )
                    .bind(ns)
                    .bind(&job)
                    .bind(effect.attempt as i32)
                    .bind(&token)
                    .bind(&effect.process)
                    .bind(effect.started_us)
                    .bind(ended)
                    .execute(&mut *tx)
                    .await
                    .map_err(Error::database)?;
                    match output {
                        Some(o) => q.complete_in_tx_with_output(&mut tx, lease, o).await?,
                        None => q.complete_in_tx(&mut tx, lease).await?,
                    }
                    tokio::time::sleep(hold).await;
                    tx.commit().await.map_err(Error::database)
                }
                .await;
                in_tx(false);
                r
            }
        }
    }

    /// How many effects each job of namespace `ns` has (jobs without effects are absent).
    pub(crate) async fn effect_counts(&self, ns: &str) -> anyhow::Result<HashMap<String, i64>> {
        let rows: Vec<(String, i64)> = match self {
            Db::Sqlite(q) => {
                sqlx::query_as("SELECT job_id, COUNT(*) FROM chaos_effects WHERE ns = ? GROUP BY job_id")
                    .bind(ns)
                    .fetch_all(q.writer_pool())
                    .await?
            }
            Db::Postgres(q) => {
                sqlx::query_as(
                    "SELECT job_id, COUNT(*) FROM chaos_effects WHERE ns = $1 GROUP BY job_id",
                )
                .bind(ns)
                .fetch_all(q.pool())
                .await?
            }
            Db::Mysql(q) => {
                sqlx::query_as(
                    "SELECT job_id, CAST(COUNT(*) AS SIGNED) FROM chaos_effects WHERE ns = ? GROUP BY job_id",
                )
                .bind(ns)
                .fetch_all(q.pool())
                .await?
            }
        };
        Ok(rows.into_iter().collect())
    }

    /// Removes what a run left: its effects and its queue tables (SQLite files are removed
    /// with their directory).
    pub(crate) async fn cleanup(&self, ns: &str) -> anyhow::Result<()> {
        match self {
            Db::Sqlite(q) => q.close().await,
            Db::Postgres(q) => {
                sqlx::query("DELETE FROM chaos_effects WHERE ns = $1")
                    .bind(ns)
                    .execute(q.pool())
                    .await?;
                sqlx::query(namespaced("DROP SCHEMA IF EXISTS {ns} CASCADE", ns)?)
                    .execute(q.pool())
                    .await?;
            }
            Db::Mysql(q) => {
                sqlx::query("DELETE FROM chaos_effects WHERE ns = ?")
                    .bind(ns)
                    .execute(q.pool())
                    .await?;
                q.drop_tables().await?;
            }
        }
        Ok(())
    }

    /// A slow database: a transaction of another client holds locks on the queue's live rows
    /// (SQLite: its write lock) for `hold`, then rolls back. Returns how many rows it locked.
    pub(crate) async fn hold_locks(&self, t: &Target, hold: Duration) -> anyhow::Result<u64> {
        match self {
            Db::Sqlite(_) => {
                let options = sqlx::sqlite::SqliteConnectOptions::from_str(&sqlite_url(&t.url))?
                    .busy_timeout(Duration::from_secs(30));
                let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
                sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await?;
                tokio::time::sleep(hold).await;
                sqlx::query("ROLLBACK").execute(&mut conn).await?;
                Ok(0)
            }
            Db::Postgres(_) => {
                let mut conn = sqlx::PgConnection::connect(&t.url).await?;
                let mut tx = conn.begin().await?;
                sqlx::query("SELECT set_config('search_path', $1, true)")
                    .bind(&t.ns)
                    .execute(&mut *tx)
                    .await?;
                let rows = sqlx::query(
                    "SELECT id FROM jobs WHERE state IN ('pending', 'running') FOR UPDATE",
                )
                .fetch_all(&mut *tx)
                .await?;
                tokio::time::sleep(hold).await;
                tx.rollback().await?;
                Ok(rows.len() as u64)
            }
            Db::Mysql(_) => {
                let sql = namespaced(
                    "SELECT id FROM {ns}_jobs WHERE state IN ('pending', 'running') FOR UPDATE",
                    &t.ns,
                )?;
                let mut conn = sqlx::MySqlConnection::connect(&t.url).await?;
                let mut tx = conn.begin().await?;
                let rows = sqlx::query(sql).fetch_all(&mut *tx).await?;
                tokio::time::sleep(hold).await;
                tx.rollback().await?;
                Ok(rows.len() as u64)
            }
        }
    }
}

/// Closes every other client connection to the database of `url` (PostgreSQL
/// `pg_terminate_backend`, MariaDB `KILL CONNECTION`). Only ever pointed at a private server
/// instance this program started. Returns how many it closed.
pub(crate) async fn kill_connections(kind: Kind, url: &str) -> anyhow::Result<u64> {
    match kind {
        Kind::Sqlite => bail!("SQLite has no connections to close"),
        Kind::Postgres => {
            let mut conn = sqlx::PgConnection::connect(url).await?;
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid() \
                 AND backend_type = 'client backend') t",
            )
            .fetch_one(&mut conn)
            .await?;
            conn.close().await?;
            Ok(n as u64)
        }
        Kind::Mysql => {
            let mut conn = sqlx::MySqlConnection::connect(url).await?;
            let ids: Vec<u64> = sqlx::query_scalar(
                "SELECT CAST(ID AS UNSIGNED) FROM information_schema.PROCESSLIST \
                 WHERE ID <> CONNECTION_ID() AND DB = DATABASE() AND COMMAND <> 'Daemon'",
            )
            .fetch_all(&mut conn)
            .await?;
            let mut killed = 0;
            for id in ids {
                // A connection may close by itself between the listing and the kill.
                if sqlx::query("KILL CONNECTION ?")
                    .bind(id)
                    .execute(&mut conn)
                    .await
                    .is_ok()
                {
                    killed += 1;
                }
            }
            conn.close().await?;
            Ok(killed)
        }
    }
}

/// A SQLite URL for sqlx from a path or URL.
pub(crate) fn sqlite_url(url: &str) -> String {
    if url.to_ascii_lowercase().starts_with("sqlite:") {
        url.to_owned()
    } else {
        format!("sqlite://{url}")
    }
}

/// Microseconds since the Unix epoch on this machine's clock (the servers under test run on
/// the same machine, so their timestamps are on the same clock).
pub(crate) fn now_us() -> i64 {
    chrono::Utc::now().timestamp_micros()
}
