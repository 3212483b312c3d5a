//! Embedded migrations, applied in order under a transaction-scoped advisory lock so that
//! several processes migrating the same schema at once are serialized.

use queue_core::Result;
use sqlx::{Executor, PgPool};

use crate::error::map;
use crate::sql::{with_schema, Statements};

/// One schema change, applied once per schema and recorded in `{schema}.migrations`.
struct Migration {
    version: i32,
    name: &'static str,
    sql: &'static str,
}

/// Every migration, oldest first. Append only: an applied migration never changes.
const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    name: "jobs",
    sql: include_str!("../migrations/0001_jobs.sql"),
}];

/// Creates the schema and applies every migration it lacks, all in one transaction: either the
/// schema ends up current or nothing changed.
pub(crate) async fn run(pool: &PgPool, sql: &Statements, schema: &str) -> Result<()> {
    let mut tx = pool.begin().await.map_err(map)?;
    sqlx::query(&sql.migration_lock)
        .bind(format!("queue-migrate:{schema}"))
        .execute(&mut *tx)
        .await
        .map_err(map)?;
    sqlx::query(&sql.migration_schema)
        .execute(&mut *tx)
        .await
        .map_err(map)?;
    sqlx::query(&sql.migration_table)
        .execute(&mut *tx)
        .await
        .map_err(map)?;
    let applied: Vec<i32> = sqlx::query_scalar(&sql.migration_applied)
        .fetch_all(&mut *tx)
        .await
        .map_err(map)?;
    for m in MIGRATIONS.iter().filter(|m| !applied.contains(&m.version)) {
        tracing::info!(target: "queue::postgres", schema, version = m.version, name = m.name, "applying migration");
        // No bound values: sent as a simple query, which may hold several statements.
        let text = with_schema(m.sql, schema);
        (&mut *tx).execute(text.as_str()).await.map_err(map)?;
        sqlx::query(&sql.migration_record)
            .bind(m.version)
            .bind(m.name)
            .execute(&mut *tx)
            .await
            .map_err(map)?;
    }
    tx.commit().await.map_err(map)
}
