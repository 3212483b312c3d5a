//! Fixtures shared by the integration tests: a migrated queue in a fresh temporary file, and
//! raw reads of the table so tests assert what is stored, not only what the API returns.
#![allow(dead_code, unreachable_pub)]

use queue_core::{ClaimStrategy, JobId, Queue};
use queue_sqlite::SqliteQueue;
use sqlx::Row;
use tempfile::TempDir;

/// A queue over a new database file that lives as long as the returned directory.
pub async fn queue(strategy: ClaimStrategy) -> (SqliteQueue, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let q = open(&dir, strategy).await;
    q.migrate().await.unwrap();
    (q, dir)
}

/// Another queue value on the database file in `dir`.
pub async fn open(dir: &TempDir, strategy: ClaimStrategy) -> SqliteQueue {
    let path = dir.path().join("queue.db");
    SqliteQueue::builder(format!("sqlite://{}", path.display()))
        .claim_strategy(strategy)
        .connect()
        .await
        .unwrap()
}

/// The stored row of one job, read straight from the table.
#[derive(Debug)]
pub struct RawRow {
    pub state: String,
    pub attempts: i64,
    pub run_at: i64,
    pub lease_token: Option<Vec<u8>>,
    pub lease_expires_at: Option<i64>,
    pub last_error: Option<String>,
    pub finished_at: Option<i64>,
    pub version: i64,
    pub updated_at: i64,
}

pub async fn raw(q: &SqliteQueue, id: JobId) -> Option<RawRow> {
    let row = sqlx::query(
        "SELECT state, attempts, run_at, lease_token, lease_expires_at, last_error, \
         finished_at, version, updated_at FROM queue_jobs WHERE id = ?",
    )
    .bind(id.0)
    .fetch_optional(q.writer_pool())
    .await
    .unwrap()?;
    Some(RawRow {
        state: row.get("state"),
        attempts: row.get("attempts"),
        run_at: row.get("run_at"),
        lease_token: row.get("lease_token"),
        lease_expires_at: row.get("lease_expires_at"),
        last_error: row.get("last_error"),
        finished_at: row.get("finished_at"),
        version: row.get("version"),
        updated_at: row.get("updated_at"),
    })
}

/// Number of rows in the jobs table.
pub async fn count(q: &SqliteQueue) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM queue_jobs")
        .fetch_one(q.writer_pool())
        .await
        .unwrap()
}

/// Microseconds since the epoch on the host clock.
pub fn now_us() -> i64 {
    chrono::Utc::now().timestamp_micros()
}
