//! Embedded migrations, applied in order, each in its own `BEGIN IMMEDIATE` transaction.
//!
//! `BEGIN IMMEDIATE` takes the database's write lock before anything is read, so when two
//! processes migrate the same file at once the second waits (up to the busy timeout), then sees
//! the version recorded by the first and skips it.

use queue_core::Result;
use sqlx::sqlite::SqlitePool;

use crate::error;
use crate::queue::now_micros;
use crate::LOG_TARGET;

/// One schema change: its version, a name for the bookkeeping table, and its SQL.
struct Migration {
    version: i64,
    name: &'static str,
    sql: &'static str,
}

const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    name: "init",
    sql: include_str!("../migrations/0001_init.sql"),
}];

const CREATE_TABLE: &str = include_str!("../queries/migrations_table.sql");
const IS_APPLIED: &str = include_str!("../queries/migration_applied.sql");
const RECORD: &str = include_str!("../queries/migration_record.sql");

/// Applies every migration not yet recorded in `queue_migrations`.
pub(crate) async fn run(writer: &SqlitePool) -> Result<()> {
    for m in MIGRATIONS {
        let mut tx = writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(error::db)?;
        sqlx::query(CREATE_TABLE)
            .execute(&mut *tx)
            .await
            .map_err(error::db)?;
        let applied = sqlx::query(IS_APPLIED)
            .bind(m.version)
            .fetch_optional(&mut *tx)
            .await
            .map_err(error::db)?
            .is_some();
        if applied {
            tx.commit().await.map_err(error::db)?;
            continue;
        }
        // SQLite runs every statement of a multi-statement string in order.
        sqlx::query(m.sql)
            .persistent(false)
            .execute(&mut *tx)
            .await
            .map_err(error::db)?;
        sqlx::query(RECORD)
            .bind(m.version)
            .bind(m.name)
            .bind(now_micros())
            .execute(&mut *tx)
            .await
            .map_err(error::db)?;
        tx.commit().await.map_err(error::db)?;
        tracing::info!(target: LOG_TARGET, version = m.version, name = m.name, "migration applied");
    }
    Ok(())
}
