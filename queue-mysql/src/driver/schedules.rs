//! MySQL/MariaDB's [`Schedules`](queue_core::engine::Schedules) statements: the stored periodic
//! jobs.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{ScheduleAdvance, Schedules, StoredSchedule, Target};
use sqlx::mysql::MySqlConnection;

use super::rows::{bind_definition, schedule_from_row};
use super::MySqlDriver;

#[async_trait]
impl Schedules for MySqlDriver {
    async fn schedule_get(&self, name: &str) -> Result<Option<StoredSchedule>, sqlx::Error> {
        let row = sqlx::query(self.sql.schedule_get.clone())
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_list(&self) -> Result<Vec<StoredSchedule>, sqlx::Error> {
        let rows = sqlx::query(self.sql.schedule_list.clone())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn schedule_insert(&self, s: &StoredSchedule) -> Result<(), sqlx::Error> {
        let q = sqlx::query(self.sql.schedule_insert.clone()).bind(&s.name);
        bind_definition(q, s)
            .bind(s.created_at)
            .bind(s.updated_at)
            .bind(&s.kind)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn schedule_update(&self, s: &StoredSchedule, version: i64) -> Result<u64, sqlx::Error> {
        let done = bind_definition(sqlx::query(self.sql.schedule_update.clone()), s)
            .bind(s.updated_at)
            .bind(&s.kind)
            .bind(&s.name)
            .bind(version)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn schedule_touch(
        &self,
        name: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.schedule_touch.clone())
            .bind(expires_at)
            .bind(expires_at)
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn schedule_advance(
        &self,
        target: Target<'_, MySqlConnection>,
        p: ScheduleAdvance<'_>,
    ) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.schedule_advance.clone())
            .bind(p.last_slot)
            .bind(p.last_job.0)
            .bind(p.now)
            .bind(p.name)
            .bind(p.version);
        let done = match target {
            Target::Pool => q.execute(&self.pool).await?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn schedule_delete(&self, name: &str, version: i64) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.schedule_delete.clone())
            .bind(name)
            .bind(version)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }
}
