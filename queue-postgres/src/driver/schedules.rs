//! PostgreSQL's [`Schedules`](queue_core::engine::Schedules) statements: the stored periodic jobs.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{ScheduleAdvance, Schedules, StoredSchedule, Target};
use sqlx::postgres::PgConnection;

use crate::pinned::on_pool;

use super::rows::{bind_schedule, schedule_from_row};
use super::PgDriver;

#[async_trait]
impl Schedules for PgDriver {
    async fn schedule_get(&self, name: &str) -> Result<Option<StoredSchedule>, sqlx::Error> {
        let row = on_pool!(self, |e| sqlx::query(self.sql.schedule_get.clone())
            .persistent(self.named())
            .bind(name)
            .fetch_optional(e))?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_list(&self) -> Result<Vec<StoredSchedule>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.schedule_list.clone())
            .persistent(self.named())
            .fetch_all(e))?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn schedule_insert(&self, s: &StoredSchedule) -> Result<(), sqlx::Error> {
        let q = bind_schedule(
            sqlx::query(self.sql.schedule_insert.clone()).persistent(self.named()),
            s,
        )
        .bind(s.created_at)
        .bind(s.updated_at)
        .bind(&s.kind);
        on_pool!(self, |e| q.execute(e))?;
        Ok(())
    }

    async fn schedule_update(&self, s: &StoredSchedule, version: i64) -> Result<u64, sqlx::Error> {
        let q = bind_schedule(
            sqlx::query(self.sql.schedule_update.clone()).persistent(self.named()),
            s,
        )
        .bind(s.updated_at)
        .bind(version)
        .bind(&s.kind);
        let done = on_pool!(self, |e| q.execute(e))?;
        Ok(done.rows_affected())
    }

    async fn schedule_touch(
        &self,
        name: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.schedule_touch.clone())
            .persistent(self.named())
            .bind(name)
            .bind(expires_at)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn schedule_advance(
        &self,
        target: Target<'_, PgConnection>,
        p: ScheduleAdvance<'_>,
    ) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.schedule_advance.clone())
            .persistent(self.named())
            .bind(p.name)
            .bind(p.version)
            .bind(p.last_slot)
            .bind(p.last_job.0)
            .bind(p.now);
        let done = match target {
            Target::Pool => on_pool!(self, |e| q.execute(e))?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn schedule_delete(&self, name: &str, version: i64) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.schedule_delete.clone())
            .persistent(self.named())
            .bind(name)
            .bind(version)
            .execute(e))?;
        Ok(done.rows_affected())
    }
}
