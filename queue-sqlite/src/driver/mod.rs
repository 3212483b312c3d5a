//! [`SqliteDriver`]: the SQLite statements behind the engine.
//!
//! Every write goes through one connection (SQLite admits one writer at a time, so more writer
//! connections would only queue on the file lock); reads use a separate read-only pool and never
//! block the writer, thanks to WAL. Transactions of more than one statement start with
//! `BEGIN IMMEDIATE`, which takes the write lock before reading, so a transaction never has to
//! upgrade a read lock (the upgrade is what can fail with `SQLITE_BUSY` without waiting).
//! A single writing statement runs in autocommit mode, where SQLite takes the write lock at the
//! start of the statement in the same way, so it needs no explicit transaction.
//!
//! Time: SQLite has no clock of its own, so "the database clock" is this host's clock, read in
//! Rust at microsecond precision and bound into each statement as INTEGER microseconds since
//! the Unix epoch (UTC).

use std::time::Duration;

use queue_core::engine::{micros, JobClaim, JobInsert, Target};
use queue_core::JobId;
use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::{Row, SqlStr, Sqlite, Transaction};
use uuid::Uuid;

use crate::sql::Statements;

use rows::{now_micros, rows_of};

mod claim;
mod controls;
mod lifecycle;
mod maintenance;
mod operators;
mod push;
pub(crate) mod rows;
mod running;
mod schedules;
mod workflows;

/// SQLite's default limit on bound parameters in one statement (`SQLITE_MAX_VARIABLE_NUMBER`
/// since 3.32); multi-row statements are chunked to stay under it.
const MAX_PARAMS: usize = 32_766;
/// Values bound per row of `job_insert`.
const INSERT_PARAMS: usize = 15;
/// Rows per `job_insert` statement.
const INSERT_ROWS: usize = MAX_PARAMS / INSERT_PARAMS;
/// Leases per `job_complete_many` / `job_rescue` statement (two values each, plus five).
const PAIRS: usize = (MAX_PARAMS - 5) / 2;

/// The SQLite driver behind [`crate::SqliteQueue`]: the writer connection, the read pool, and
/// the statements. Reached through [`queue_core::Backend::engine`].
#[derive(Debug)]
pub struct SqliteDriver {
    pub(crate) writer: SqlitePool,
    pub(crate) reader: SqlitePool,
    pub(crate) sql: Statements,
    /// Single pushes outside a transaction, written together when they arrive together.
    pub(crate) pushes: std::sync::Arc<crate::coalesce::Coalescer>,
}

/// Inserts `jobs` with one multi-row `INSERT` (the caller keeps them under the parameter limit).
pub(crate) async fn insert_rows(
    job_insert: &SqlStr,
    conn: &mut SqliteConnection,
    jobs: &[queue_core::NewJob],
    delays: &[Duration],
    now: i64,
) -> Result<(), sqlx::Error> {
    let statement = rows_of(job_insert, jobs.len());
    let mut q = sqlx::query(statement);
    for (job, delay) in jobs.iter().zip(delays) {
        q = q
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(i64::from(job.max_attempts_value()))
            .bind(now.saturating_add(micros(*delay)))
            .bind(job.dedup_key_value())
            .bind(job.kind_value())
            .bind(job.meta_json())
            .bind(job.timeout_value().map(micros))
            .bind(now)
            .bind(now)
            .bind(job.concurrency_key_value())
            .bind(job.initial_state().as_str())
            .bind(job.workflow_id().map(|w| w.0));
    }
    q.execute(conn).await?;
    Ok(())
}

async fn insert_chunks(
    sql: &Statements,
    conn: &mut SqliteConnection,
    p: JobInsert<'_>,
) -> Result<(), sqlx::Error> {
    let now = now_micros();
    for (jobs, delays) in p.jobs.chunks(INSERT_ROWS).zip(p.delays.chunks(INSERT_ROWS)) {
        insert_rows(&sql.job_insert, conn, jobs, delays, now).await?;
    }
    Ok(())
}

impl SqliteDriver {
    /// `job_claim` with its values bound.
    fn claim_query(
        &self,
        p: JobClaim<'_>,
    ) -> sqlx::query::Query<'_, Sqlite, sqlx::sqlite::SqliteArguments> {
        sqlx::query(self.sql.job_claim.clone())
            .bind(p.queue)
            .bind(now_micros())
            .bind(micros(p.lease))
            .bind(p.worker)
            .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
            .bind(p.controls_checked)
    }

    async fn begin(&self) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
        self.writer.begin_with("BEGIN IMMEDIATE").await
    }

    /// A statement over `(id, token)` pairs, chunked under the parameter limit: binds `fixed`,
    /// then `text`, then `after` (each once per statement), then the pairs.
    /// A statement over a list of ids (the `(?)` tuple after its VALUES repeated per id, in
    /// chunks under the parameter limit), after an optional integer and text value; rows
    /// changed.
    async fn by_ids(
        &self,
        statement: &SqlStr,
        first: Option<i64>,
        text: Option<&str>,
        ids: &[JobId],
    ) -> Result<u64, sqlx::Error> {
        let mut done = 0;
        for chunk in ids.chunks(MAX_PARAMS - 2) {
            let mut q = sqlx::query(rows_of(statement, chunk.len()));
            if let Some(v) = first {
                q = q.bind(v);
            }
            if let Some(t) = text {
                q = q.bind(t);
            }
            for id in chunk {
                q = q.bind(id.0);
            }
            done += q.execute(&self.writer).await?.rows_affected();
        }
        Ok(done)
    }

    /// A writing statement over a list of ids (after `now`) that returns `id` (and `queue`,
    /// when it has one), in chunks under the parameter limit, where `target` says.
    async fn ids_returning(
        &self,
        statement: &SqlStr,
        mut target: Target<'_, SqliteConnection>,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, Option<String>)>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_PARAMS - 2) {
            let mut q = sqlx::query(rows_of(statement, chunk.len())).bind(now_micros());
            for id in chunk {
                q = q.bind(id.0);
            }
            let rows = match target.reborrow() {
                Target::Pool => q.fetch_all(&self.writer).await?,
                Target::Tx(conn) => q.fetch_all(conn).await?,
            };
            for row in &rows {
                let queue = if row.columns().len() > 1 {
                    Some(row.try_get("queue")?)
                } else {
                    None
                };
                out.push((JobId(row.try_get("id")?), queue));
            }
        }
        Ok(out)
    }

    async fn pairs(
        &self,
        statement: &SqlStr,
        fixed: &[i64],
        text: &[&str],
        after: &[i64],
        pairs: impl Iterator<Item = (Uuid, Uuid)>,
    ) -> Result<u64, sqlx::Error> {
        let pairs: Vec<(Uuid, Uuid)> = pairs.collect();
        let mut done = 0;
        for chunk in pairs.chunks(PAIRS) {
            let mut q = sqlx::query(rows_of(statement, chunk.len()));
            for v in fixed {
                q = q.bind(*v);
            }
            for t in text {
                q = q.bind(*t);
            }
            for v in after {
                q = q.bind(*v);
            }
            for (id, token) in chunk {
                q = q.bind(*id).bind(*token);
            }
            done += q.execute(&self.writer).await?.rows_affected();
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::rows::repeat_tuple;
    use super::*;

    #[test]
    fn tuples_repeat_after_values() {
        let sql = Statements::new(&[]);
        let s = repeat_tuple(sql.job_complete_many.as_str(), 3);
        assert!(s.contains("(?, ?),(?, ?),(?, ?)\n) AS leases"), "{s}");
        let s = repeat_tuple(sql.job_insert.as_str(), 2);
        assert_eq!(s.matches('?').count(), 2 * INSERT_PARAMS);
        assert!(
            !sql.job_insert.as_str().contains("--"),
            "comments are not sent"
        );
    }
}
