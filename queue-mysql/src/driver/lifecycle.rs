//! MySQL/MariaDB's [`Lifecycle`](queue_core::engine::Lifecycle) statements: migrations,
//! transactions, savepoints, the clock and notifications.

use chrono::{DateTime, Utc};
use queue_core::engine::{DriverFault, Migration};
use sqlx::mysql::MySqlConnection;
use sqlx::{Executor, MySql};

use crate::migrate::{
    lock_timeout, statements, LockRow, Migrator, MIGRATIONS, MIGRATION_LOCK_TIMEOUT,
};

use super::MySqlDriver;

queue_core::sqlx_lifecycle! {
    sqlx = sqlx, driver = MySqlDriver, db = MySql, conn = MySqlConnection,
    begin = |d| d.pool.begin();

    type Migrator = Migrator;

    /// A read-only server (`--read-only`, a replica, a primary switched to read-only in place)
    /// answers every write on every connection: all pooled connections made until now are
    /// retired, so the next call reconnects (wherever the server's name now leads).
    fn classify(&self, error: &sqlx::Error) -> DriverFault {
        let fault = crate::error::classify(error);
        if fault == DriverFault::Unavailable {
            // A read-only server retires every pooled connection made before; with a host
            // list, the resolver looks for the server that takes writes.
            self.nodes.unavailable(crate::error::read_only(error));
        }
        fault
    }

    fn migrations(&self) -> &'static [Migration] {
        MIGRATIONS
    }

    async fn migration_lock(&self) -> Result<Self::Migrator, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        if self.advisory_locks {
            let got: Option<i64> = sqlx::query_scalar(self.sql.migration_lock.clone())
                .bind(&self.prefix)
                .bind(MIGRATION_LOCK_TIMEOUT.as_secs() as i64)
                .fetch_one(&mut *conn)
                .await?;
            if got != Some(1) {
                return Err(lock_timeout(&self.prefix));
            }
        }
        sqlx::query(self.sql.migration_table.clone())
            .execute(&mut *conn)
            .await?;
        if self.advisory_locks {
            return Ok(Migrator { conn, row: None });
        }
        let row = LockRow::take(self.lock_row_sql(), &mut conn, &self.pool, &self.prefix).await?;
        Ok(Migrator {
            conn,
            row: Some(row),
        })
    }

    async fn migration_applied(&self, m: &mut Self::Migrator) -> Result<Vec<i64>, sqlx::Error> {
        sqlx::query_scalar(self.sql.migration_applied.clone())
            .fetch_all(&mut *m.conn)
            .await
    }

    async fn migration_apply(
        &self,
        m: &mut Self::Migrator,
        migration: &Migration,
    ) -> Result<(), sqlx::Error> {
        if let Some(row) = &m.row {
            row.check(&self.lock_row_sql(), &mut m.conn, &self.prefix)
                .await?;
        }
        for stmt in statements(migration.sql, &self.prefix) {
            let lone_drop = crate::migrate::is_lone_drop(&stmt);
            match m.conn.execute(sqlx::AssertSqlSafe(stmt)).await {
                Ok(_) => {}
                // A statement that adds columns or an index and was applied before its record
                // (DDL commits by itself): "duplicate column name" or "duplicate key name",
                // which only such a rerun produces here. Likewise a statement that only drops
                // an index: "can't drop". (A statement that drops and adds in one ALTER is
                // written to be repeatable instead, and its "can't drop" is an error.)
                Err(e)
                    if crate::error::is_already_added(&e)
                        || (lone_drop && crate::error::is_already_dropped(&e)) =>
                {
                    tracing::info!(target: crate::LOG_TARGET, version = migration.version, "the migration's columns or indexes are in place already; recording it");
                }
                Err(e) => return Err(e),
            }
        }
        sqlx::query(self.sql.migration_record.clone())
            .bind(migration.version)
            .bind(migration.name)
            .execute(&mut *m.conn)
            .await?;
        Ok(())
    }

    async fn migration_unlock(
        &self,
        mut m: Self::Migrator,
        _commit: bool,
    ) -> Result<(), sqlx::Error> {
        // DDL commits by itself here; only the lock is left to release.
        if let Some(row) = m.row.take() {
            // The renewals stop first; a lock row left behind (this call failed) runs out with
            // its lease.
            let token = row.stop();
            sqlx::query(self.sql.migration_unlock_row.clone())
                .bind(&token)
                .execute(&mut *m.conn)
                .await?;
            return Ok(());
        }
        let unlocked = sqlx::query(self.sql.migration_unlock.clone())
            .bind(&self.prefix)
            .execute(&mut *m.conn)
            .await;
        if unlocked.is_err() {
            // The lock dies with the session; make sure this connection is not reused.
            m.conn.close_on_drop();
        }
        unlocked.map(|_| ())
    }

    async fn now(&self) -> Result<DateTime<Utc>, sqlx::Error> {
        sqlx::query_scalar(self.sql.now.clone())
            .fetch_one(&self.pool)
            .await
    }
}
