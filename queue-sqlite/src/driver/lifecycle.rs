//! SQLite's [`Lifecycle`](queue_core::engine::Lifecycle) statements: migrations, transactions,
//! savepoints, the clock and notifications.

use chrono::{DateTime, Utc};
use queue_core::engine::{DriverFault, Migration};
use sqlx::sqlite::SqliteConnection;
use sqlx::{Sqlite, Transaction};

use crate::migrate::MIGRATIONS;

use super::rows::{now_micros, to_time};
use super::SqliteDriver;

queue_core::sqlx_lifecycle! {
    sqlx = sqlx, driver = SqliteDriver, db = Sqlite, conn = SqliteConnection,
    begin = |d| d.begin();

    type Migrator = Transaction<'static, Sqlite>;

    fn classify(&self, error: &sqlx::Error) -> DriverFault {
        crate::error::classify(error)
    }

    fn migrations(&self) -> &'static [Migration] {
        MIGRATIONS
    }

    /// `BEGIN IMMEDIATE` takes the database's write lock before anything is read, so when two
    /// processes migrate the same file at once the second waits (up to the busy timeout), then
    /// sees the versions recorded by the first.
    async fn migration_lock(&self) -> Result<Self::Migrator, sqlx::Error> {
        let mut tx = self.begin().await?;
        sqlx::query(self.sql.migration_table.clone())
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    async fn migration_applied(&self, m: &mut Self::Migrator) -> Result<Vec<i64>, sqlx::Error> {
        sqlx::query_scalar(self.sql.migration_applied.clone())
            .fetch_all(&mut **m)
            .await
    }

    async fn migration_apply(
        &self,
        m: &mut Self::Migrator,
        migration: &Migration,
    ) -> Result<(), sqlx::Error> {
        // SQLite runs every statement of a multi-statement string in order.
        sqlx::raw_sql(migration.sql).execute(&mut **m).await?;
        sqlx::query(self.sql.migration_record.clone())
            .bind(migration.version)
            .bind(migration.name)
            .bind(now_micros())
            .execute(&mut **m)
            .await?;
        Ok(())
    }

    async fn migration_unlock(&self, m: Self::Migrator, commit: bool) -> Result<(), sqlx::Error> {
        if commit {
            m.commit().await
        } else {
            m.rollback().await
        }
    }

    async fn now(&self) -> Result<DateTime<Utc>, sqlx::Error> {
        to_time(now_micros())
    }
}
