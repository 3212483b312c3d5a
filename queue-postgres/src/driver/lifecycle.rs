//! PostgreSQL's [`Lifecycle`](queue_core::engine::Lifecycle) statements: migrations, transactions,
//! savepoints, the clock and notifications.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use queue_core::engine::statements::load;
use queue_core::engine::{DriverFault, Migration};
use queue_core::WakeHub;
use sqlx::postgres::PgConnection;
use sqlx::{Postgres, Transaction};

use crate::listen::Probe;
use crate::migrate::MIGRATIONS;
use crate::pinned::on_pool;

use super::PgDriver;

queue_core::sqlx_lifecycle! {
    sqlx = sqlx, driver = PgDriver, db = Postgres, conn = PgConnection,
    begin = |d| d.pool.begin();

    type Migrator = Transaction<'static, Postgres>;

    /// Also where an outage is noticed: a read-only or departing server retires every pooled
    /// connection, and a host list is walked again (see `nodes`).
    fn classify(&self, error: &sqlx::Error) -> DriverFault {
        let fault = crate::error::classify(error);
        if fault == DriverFault::Unavailable {
            self.nodes.unavailable(crate::error::wrong_node(error));
        }
        if !self.pinned && crate::error::lost_prepared_statement(error) {
            self.pooler_hint.call_once(|| {
                tracing::warn!(
                    target: crate::LOG_TARGET,
                    %error,
                    "a prepared statement was missing or already there: a pooler in transaction \
                     mode (PgBouncer) seems to sit between the queue and PostgreSQL; add \
                     pooler=transaction to the URL (or use session mode)"
                );
            });
        }
        fault
    }

    fn migrations(&self) -> &'static [Migration] {
        MIGRATIONS
    }

    async fn migration_lock(&self) -> Result<Self::Migrator, sqlx::Error> {
        if !self.profile.advisory_locks {
            return crate::migrate::lock_row(&self.pool, &self.sql, self.named()).await;
        }
        let mut tx = self.pool.begin().await?;
        sqlx::query(self.sql.migration_lock.clone())
            .persistent(self.named())
            .bind(format!("queue-migrate:{}", self.schema))
            .execute(&mut *tx)
            .await?;
        sqlx::raw_sql(self.sql.migration_table.clone())
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    async fn migration_applied(&self, m: &mut Self::Migrator) -> Result<Vec<i64>, sqlx::Error> {
        sqlx::query_scalar(self.sql.migration_applied.clone())
            .persistent(self.named())
            .fetch_all(&mut **m)
            .await
    }

    async fn migration_apply(
        &self,
        m: &mut Self::Migrator,
        migration: &Migration,
    ) -> Result<(), sqlx::Error> {
        // No bound values: sent as a simple query, which may hold several statements. The
        // file's text, with nothing spliced in but the validated schema name.
        let text = load(migration.sql, &[("{schema}", &self.schema)]);
        sqlx::raw_sql(sqlx::AssertSqlSafe(text))
            .execute(&mut **m)
            .await?;
        sqlx::query(self.sql.migration_record.clone())
            .persistent(self.named())
            .bind(migration.version)
            .bind(migration.name)
            .execute(&mut **m)
            .await?;
        Ok(())
    }

    async fn migration_unlock(
        &self,
        mut m: Self::Migrator,
        commit: bool,
    ) -> Result<(), sqlx::Error> {
        // What the layout was read as may change with this migration.
        self.layout.forget();
        if !commit {
            return m.rollback().await;
        }
        if let Some(every) = self.partitions {
            // Finished partitions are turned on in the same transaction, once the migration
            // that makes jobs_done has been applied (a partial migration leaves them for later).
            let applied: Vec<i64> = sqlx::query_scalar(self.sql.migration_applied.clone())
                .persistent(self.named())
                .fetch_all(&mut *m)
                .await?;
            if applied.contains(&crate::migrate::FINISHED_JOBS) {
                sqlx::raw_sql(self.sql.migration_partitions.clone())
                    .execute(&mut *m)
                    .await?;
                sqlx::query(self.sql.migration_partitions_enable.clone())
                    .persistent(self.named())
                    .bind(i64::try_from(every.as_secs()).unwrap_or(i64::MAX))
                    .execute(&mut *m)
                    .await?;
            }
        }
        m.commit().await
    }

    async fn now(&self) -> Result<DateTime<Utc>, sqlx::Error> {
        on_pool!(self, |e| sqlx::query_scalar(self.sql.now.clone())
            .persistent(self.named())
            .fetch_one(e))
    }

    async fn notify(&self, queues: &[&str]) -> Result<(), sqlx::Error> {
        if self.wakes(queues).is_empty() {
            return Ok(());
        }
        on_pool!(self, |e| sqlx::query(self.sql.notify.clone())
            .persistent(self.named())
            .bind(&self.channel)
            .bind(queues)
            .execute(e))?;
        Ok(())
    }

    fn watch(&self, queue: &str, hub: &Arc<WakeHub>) {
        if self.listen {
            self.listener.ensure(
                queue,
                &self.listen_pool,
                &self.channel,
                hub,
                self.nodes.moved(),
                Probe {
                    pool: self.pool.clone(),
                    pinned: self.pinned,
                    notify: self.sql.notify.clone(),
                },
            );
        }
    }
}
