//! SQLite's [`Schedules`](queue_core::engine::Schedules) statements: the stored periodic jobs.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{ScheduleAdvance, Schedules, StoredSchedule, Target};
use sqlx::sqlite::SqliteConnection;

use super::rows::{bind_schedule, schedule_from_row};
use super::SqliteDriver;

#[async_trait]
impl Schedules for SqliteDriver {
    async fn schedule_get(&self, name: &str) -> Result<Option<StoredSchedule>, sqlx::Error> {
        let row = sqlx::query(self.sql.schedule_get.clone())
            .bind(name)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_list(&self) -> Result<Vec<StoredSchedule>, sqlx::Error> {
        let rows = sqlx::query(self.sql.schedule_list.clone())
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn schedule_insert(&self, s: &StoredSchedule) -> Result<(), sqlx::Error> {
        bind_schedule(sqlx::query(self.sql.schedule_insert.clone()), s)
            .bind(s.created_at.timestamp_micros())
            .bind(s.updated_at.timestamp_micros())
            .bind(&s.kind)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn schedule_update(&self, s: &StoredSchedule, version: i64) -> Result<u64, sqlx::Error> {
        let done = bind_schedule(sqlx::query(self.sql.schedule_update.clone()), s)
            .bind(s.updated_at.timestamp_micros())
            .bind(version)
            .bind(&s.kind)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn schedule_touch(
        &self,
        name: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.schedule_touch.clone())
            .bind(name)
            .bind(expires_at.timestamp_micros())
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn schedule_advance(
        &self,
        target: Target<'_, SqliteConnection>,
        p: ScheduleAdvance<'_>,
    ) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.schedule_advance.clone())
            .bind(p.name)
            .bind(p.version)
            .bind(p.last_slot.timestamp_micros())
            .bind(p.last_job.0)
            .bind(p.now.timestamp_micros());
        let done = match target {
            Target::Pool => q.execute(&self.writer).await?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn schedule_delete(&self, name: &str, version: i64) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.schedule_delete.clone())
            .bind(name)
            .bind(version)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }
}
