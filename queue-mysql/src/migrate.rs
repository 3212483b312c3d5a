//! Embedded migrations, applied under a server-wide named lock so concurrent runs are safe.
//!
//! DDL commits implicitly on MySQL and MariaDB, so a migration and its bookkeeping row cannot
//! share a transaction. Every migration is therefore written to be re-runnable
//! (`CREATE TABLE IF NOT EXISTS`, ...): a crash between the DDL and the record only means the
//! DDL runs again, harmlessly, next time.

use std::time::Duration;

use queue_core::{Error, Result};
use sqlx::mysql::MySqlConnection;
use sqlx::{Executor, Row};

use crate::error;
use crate::queue::Inner;

/// One embedded migration.
pub(crate) struct Migration {
    pub(crate) version: i64,
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

/// Every migration, in order.
pub(crate) const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    name: "create_jobs",
    sql: include_str!("../migrations/0001_create_jobs.sql"),
}];

/// How long `migrate` waits for another process's migration to finish.
const LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// The statements of a migration file: split on `;` at the end of a line, comments dropped.
pub(crate) fn statements(sql: &str, prefix: &str) -> Vec<String> {
    let body: String = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    body.split(";\n")
        .map(|s| s.trim().trim_end_matches(';').trim())
        .filter(|s| !s.is_empty())
        .map(|s| s.replace("{prefix}", prefix))
        .collect()
}

pub(crate) async fn run(inner: &Inner) -> Result<()> {
    let mut conn = inner.pool.acquire().await.map_err(error::map)?;
    let got: Option<i64> = sqlx::query_scalar(&inner.sql.migrate_lock)
        .bind(&inner.prefix)
        .bind(LOCK_TIMEOUT.as_secs() as i64)
        .fetch_one(&mut *conn)
        .await
        .map_err(error::map)?;
    if got != Some(1) {
        return Err(Error::database(format!(
            "timed out after {LOCK_TIMEOUT:?} waiting for the migration lock of prefix {}",
            inner.prefix
        )));
    }
    let result = apply(inner, &mut conn).await;
    let unlocked = sqlx::query(&inner.sql.migrate_unlock)
        .bind(&inner.prefix)
        .execute(&mut *conn)
        .await;
    if unlocked.is_err() {
        // The lock dies with the session; make sure this connection is not reused.
        conn.close_on_drop();
    }
    result
}

async fn apply(inner: &Inner, conn: &mut MySqlConnection) -> Result<()> {
    sqlx::query(&inner.sql.migrations_create)
        .execute(&mut *conn)
        .await
        .map_err(error::map)?;
    let applied: Vec<i64> = sqlx::query(&inner.sql.migrations_applied)
        .fetch_all(&mut *conn)
        .await
        .map_err(error::map)?
        .iter()
        .map(|r| r.try_get::<i64, _>(0))
        .collect::<Result<_, _>>()
        .map_err(error::map)?;
    for m in MIGRATIONS {
        if applied.contains(&m.version) {
            continue;
        }
        for stmt in statements(m.sql, &inner.prefix) {
            conn.execute(stmt.as_str()).await.map_err(error::map)?;
        }
        sqlx::query(&inner.sql.migrations_record)
            .bind(m.version)
            .bind(m.name)
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
        tracing::info!(target: "queue::mysql", version = m.version, name = m.name, prefix = %inner.prefix, "migration applied");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_statements_are_prefixed_and_comment_free() {
        let stmts = statements(MIGRATIONS[0].sql, "abc_");
        assert_eq!(stmts.len(), 1);
        assert!(stmts[0].starts_with("CREATE TABLE IF NOT EXISTS abc_jobs"));
        assert!(!stmts[0].contains("--"));
        assert!(!stmts[0].contains("{prefix}"));
    }
}
