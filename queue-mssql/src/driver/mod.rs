//! [`MsSqlDriver`]: the SQL Server statements behind the engine.

use queue_core::engine::JobInsert;
use queue_core::{JobId, Lease};
use tiberius::Row;

use crate::bind::{params, Params};
use crate::error::MsSqlError;
use crate::pool::{MsSqlConnection, Pool};
use crate::sql::{Statements, BULK_IDS};

use rows::{id_values, insert_values};

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

/// The name of the savepoints the engine sets inside a transaction (`SAVE TRANSACTION`; a
/// rollback goes to the latest of that name).
const SAVEPOINT: &str = "queue_push";

/// The SQL Server driver behind [`crate::MsSqlQueue`]: a pool and the schema's statements.
/// Reached through [`queue_core::Backend::engine`]; its statements are its only logic.
#[derive(Debug)]
pub struct MsSqlDriver {
    pub(crate) pool: Pool,
    pub(crate) schema: String,
    pub(crate) sql: Statements,
}

/// A due pending job read by the optimistic claim: its id and row version.
#[derive(Clone, Debug)]
pub struct Candidate {
    id: Vec<u8>,
    version: Vec<u8>,
}

/// Runs the statement `sql_for(n)` of a list of `n` ids for each chunk of `ids` (at most
/// [`BULK_IDS`]: one parameter each, from `@P1`) on `conn`; the rows of every chunk. No id is
/// no statement (`IN ()` would not parse).
async fn fetch_ids(
    conn: &mut MsSqlConnection,
    ids: &[JobId],
    sql_for: impl Fn(usize) -> String + Send,
) -> Result<Vec<Row>, MsSqlError> {
    let mut rows = Vec::new();
    for chunk in ids.chunks(BULK_IDS) {
        rows.extend(
            conn.fetch(&sql_for(chunk.len()), id_values(chunk, &[]))
                .await?,
        );
    }
    Ok(rows)
}

impl MsSqlDriver {
    async fn conn(
        &self,
    ) -> Result<bb8::PooledConnection<'_, crate::pool::ConnectionManager>, MsSqlError> {
        crate::pool::checkout(&self.pool).await
    }

    async fn insert_chunks(
        &self,
        conn: &mut MsSqlConnection,
        p: &JobInsert<'_>,
        parts: &[(usize, usize)],
    ) -> Result<(), MsSqlError> {
        for &(start, end) in parts {
            let sql = self.sql.job_insert_rows(end - start);
            conn.execute(&sql, insert_values(p, start, end)).await?;
        }
        Ok(())
    }

    /// A fenced transition of `lease`: the id and token, then `more`; rows changed.
    async fn fenced(&self, sql: &str, lease: &Lease, more: Params<'_>) -> Result<u64, MsSqlError> {
        let mut params = params![lease.job_id, lease.token];
        params.append(more);
        self.conn().await?.execute(sql, params).await
    }

    async fn fetch(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, MsSqlError> {
        self.conn().await?.fetch(sql, params).await
    }

    /// A write of a queue's controls (an UPDATE, then an INSERT when it changed no row: see
    /// `queue_set_paused.sql`) as one request inside a transaction of the driver's, its verbs
    /// batches of their own (never inside `sp_executesql`, where they would fail with error
    /// 266): the UPDATE's key lock (`UPDLOCK, HOLDLOCK`) lasts until the commit, so two first
    /// writes of one queue never both insert. Committed when the request succeeded, else
    /// rolled back.
    async fn upsert(&self, sql: &str, params: Params<'_>) -> Result<(), MsSqlError> {
        let mut conn = self.conn().await?;
        conn.begin().await?;
        let done = conn.execute(sql, params).await;
        finish(&mut conn, done).await.map(|_| ())
    }
}

/// Ends the driver's own transaction on `conn`: commits after `done` succeeded, else rolls back
/// (a failed rollback leaves the error of the work itself to report).
async fn finish(
    conn: &mut MsSqlConnection,
    done: Result<u64, MsSqlError>,
) -> Result<u64, MsSqlError> {
    match done {
        Ok(total) => {
            conn.commit().await?;
            Ok(total)
        }
        Err(e) => {
            let _ = conn.rollback().await;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests;
