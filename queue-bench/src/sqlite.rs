//! SQLite: a new database file per workload for our queue and another for the hand-written
//! `UPDATE ... RETURNING` queue under `BEGIN IMMEDIATE`.

use sqlx::AssertSqlSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use async_trait::async_trait;
use queue_core::{Limits, Queue};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::Row;

use crate::backend::{fresh_tag, BackendKind, BaselineNs, DrainCheck, OursNs, Server, DAY};

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) struct SqliteServer {
    dir: PathBuf,
    /// Keeps the default temporary directory alive (and removes it at the end).
    _temp: Option<tempfile::TempDir>,
}

impl SqliteServer {
    /// `url` names a file (`sqlite://path/x.db` or a path) whose directory holds the
    /// per-workload files; without it, a temporary directory does.
    pub(crate) fn new(url: Option<&str>) -> Result<Self> {
        match url {
            Some(u) => {
                let path = u
                    .strip_prefix("sqlite://")
                    .or_else(|| u.strip_prefix("sqlite:"))
                    .unwrap_or(u);
                let path = path.split('?').next().unwrap_or(path);
                let dir = Path::new(path)
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| PathBuf::from("."));
                Ok(SqliteServer { dir, _temp: None })
            }
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("queue-bench-")
                    .tempdir()
                    .context("create a temporary directory")?;
                Ok(SqliteServer {
                    dir: temp.path().to_path_buf(),
                    _temp: Some(temp),
                })
            }
        }
    }

    fn file(&self, prefix: &str) -> Result<PathBuf> {
        Ok(self.dir.join(format!("{}.db", fresh_tag(prefix)?)))
    }
}

/// The baseline's connection settings: WAL, synchronous NORMAL (the queue's defaults too).
fn options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(BUSY_TIMEOUT)
}

async fn open(path: &Path, size: u32) -> Result<SqlitePool> {
    SqlitePoolOptions::new()
        .max_connections(size)
        .connect_with(options(path))
        .await
        .with_context(|| format!("open {}", path.display()))
}

fn remove_files(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

#[async_trait]
impl Server for SqliteServer {
    fn kind(&self) -> BackendKind {
        BackendKind::Sqlite
    }

    async fn describe(&self) -> Result<Vec<(String, String)>> {
        let path = self.file("describe")?;
        let pool = open(&path, 1).await?;
        let version: String = sqlx::query_scalar("SELECT sqlite_version()")
            .fetch_one(&pool)
            .await?;
        let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&pool)
            .await?;
        let sync: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(&pool)
            .await?;
        pool.close().await;
        remove_files(&path);
        let sync = match sync {
            0 => "OFF",
            1 => "NORMAL",
            2 => "FULL",
            3 => "EXTRA",
            _ => "unknown",
        };
        Ok(vec![
            ("version".into(), version),
            ("journal_mode".into(), journal),
            ("synchronous".into(), sync.into()),
            ("directory".into(), self.dir.display().to_string()),
        ])
    }

    async fn ours(&self, pool_size: u32) -> Result<Box<dyn OursNs>> {
        let path = self.file("bench_q")?;
        let queue = open_queue(&path, pool_size, Limits::default()).await?;
        let pool = open(&path, 1).await?;
        Ok(Box::new(SqliteOurs { path, queue, pool }))
    }

    async fn attach_with(
        &self,
        namespace: &str,
        pool_size: u32,
        limits: Limits,
    ) -> Result<Arc<dyn Queue>> {
        open_queue(Path::new(namespace), pool_size, limits).await
    }

    async fn baseline(&self, _pool_size: u32) -> Result<Box<dyn BaselineNs>> {
        let path = self.file("bench_b")?;
        // One writer connection: SQLite runs one write transaction at a time, and a pool of
        // writers would only add busy-wait sleeps; this is the strongest plain baseline.
        let pool = open(&path, 1).await?;
        sqlx::raw_sql(
            "CREATE TABLE jobs (
                 id       INTEGER PRIMARY KEY,
                 payload  TEXT    NOT NULL,
                 state    TEXT    NOT NULL DEFAULT 'pending',
                 attempts INTEGER NOT NULL DEFAULT 0
             );
             CREATE INDEX jobs_pending ON jobs (id) WHERE state = 'pending';",
        )
        .execute(&pool)
        .await
        .context("create the baseline table")?;
        Ok(Box::new(SqliteBaseline { path, pool }))
    }
}

#[cfg(feature = "sqlite")]
async fn open_queue(path: &Path, pool_size: u32, limits: Limits) -> Result<Arc<dyn Queue>> {
    let q = queue_sqlite::SqliteQueue::builder(path.display().to_string())
        .max_connections(pool_size)
        .limits(limits)
        .keep_completed_jobs(crate::backend::keep_completed())
        .connect()
        .await?;
    q.migrate().await?;
    Ok(Arc::new(q))
}

#[cfg(not(feature = "sqlite"))]
async fn open_queue(_path: &Path, _pool_size: u32, _limits: Limits) -> Result<Arc<dyn Queue>> {
    anyhow::bail!("queue-bench was built without the `sqlite` feature")
}

struct SqliteOurs {
    path: PathBuf,
    queue: Arc<dyn Queue>,
    pool: SqlitePool,
}

#[async_trait]
impl OursNs for SqliteOurs {
    fn queue(&self) -> Arc<dyn Queue> {
        self.queue.clone()
    }

    fn namespace(&self) -> String {
        self.path.display().to_string()
    }

    async fn check(&self, queue: &str) -> Result<DrainCheck> {
        let row = sqlx::query(
            "SELECT count(*), coalesce(sum(state = 'completed'), 0), \
             coalesce(sum(state = 'completed' AND attempts <> 1), 0) \
             FROM queue_jobs WHERE queue = ?",
        )
        .bind(queue)
        .fetch_one(&self.pool)
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
        let newest_at = chrono::Utc::now().timestamp_micros() - micros(newest);
        sqlx::query(
            "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ?1), \
                 times(t) AS (SELECT ?4 - CAST(?5 * (n * 1.0 / ?1) AS INTEGER) FROM s) \
             INSERT INTO queue_jobs (id, queue, payload, priority, state, attempts, max_attempts, \
                 run_at, version, created_at, updated_at, finished_at) \
             SELECT randomblob(16), ?2, ?3, 0, 'completed', 1, 25, t, 2, t, t, t FROM times",
        )
        .bind(rows as i64)
        .bind(queue)
        .bind(payload)
        .bind(newest_at)
        .bind(micros(span))
        .execute(&self.pool)
        .await?;
        sqlx::query("ANALYZE").execute(&self.pool).await?;
        Ok(true)
    }

    async fn cleanup(&self) -> Result<()> {
        self.pool.close().await;
        remove_files(&self.path);
        Ok(())
    }
}

struct SqliteBaseline {
    path: PathBuf,
    pool: SqlitePool,
}

fn placeholders(n: usize) -> String {
    vec!["?"; n].join(",")
}

#[async_trait]
impl BaselineNs for SqliteBaseline {
    async fn insert_one(&self, payload: &str) -> Result<()> {
        sqlx::query("INSERT INTO jobs (payload) VALUES (?)")
            .bind(payload)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn insert_many(&self, payloads: &[String]) -> Result<()> {
        let sql = format!(
            "INSERT INTO jobs (payload) VALUES {}",
            vec!["(?)"; payloads.len()].join(",")
        );
        let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
        for p in payloads {
            q = q.bind(p);
        }
        q.execute(&self.pool).await?;
        Ok(())
    }

    async fn claim(&self, limit: usize) -> Result<Vec<i64>> {
        let mut conn = self.pool.acquire().await?;
        sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
        let claimed = sqlx::query(
            "UPDATE jobs SET state = 'running', attempts = attempts + 1 \
             WHERE id IN (SELECT id FROM jobs WHERE state = 'pending' ORDER BY id LIMIT ?) \
             RETURNING id, payload",
        )
        .bind(limit as i64)
        .fetch_all(&mut *conn)
        .await;
        let rows = match claimed {
            Ok(rows) => rows,
            Err(e) => {
                let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                return Err(e.into());
            }
        };
        sqlx::query("COMMIT").execute(&mut *conn).await?;
        rows.iter()
            .map(|r| {
                let _payload: String = r.try_get(1)?;
                Ok(r.try_get::<i64, _>(0)?)
            })
            .collect()
    }

    async fn complete(&self, ids: &[i64]) -> Result<()> {
        let sql = format!(
            "UPDATE jobs SET state = 'done' WHERE id IN ({})",
            placeholders(ids.len())
        );
        let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
        for id in ids {
            q = q.bind(id);
        }
        q.execute(&self.pool).await?;
        Ok(())
    }

    async fn check(&self) -> Result<DrainCheck> {
        let row = sqlx::query(
            "SELECT count(*), coalesce(sum(state = 'done'), 0), \
             coalesce(sum(state = 'done' AND attempts <> 1), 0) FROM jobs",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(DrainCheck {
            total: row.try_get::<i64, _>(0)? as u64,
            completed: row.try_get::<i64, _>(1)? as u64,
            not_once: row.try_get::<i64, _>(2)? as u64,
        })
    }

    async fn cleanup(&self) -> Result<()> {
        self.pool.close().await;
        remove_files(&self.path);
        Ok(())
    }
}

/// `d` in whole microseconds, as SQLite's timestamps count them.
fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}
