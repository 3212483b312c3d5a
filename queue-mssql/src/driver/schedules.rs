//! SQL Server's [`Schedules`](queue_core::engine::Schedules) statements: the stored periodic jobs.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{ScheduleAdvance, Schedules, StoredSchedule, Target};

use crate::bind::{params, Params};
use crate::error::MsSqlError;
use crate::pool::MsSqlTransaction;

use super::rows::{schedule_from_row, schedule_insert_values, schedule_update_values};
use super::MsSqlDriver;

#[async_trait]
impl Schedules for MsSqlDriver {
    async fn schedule_get(&self, name: &str) -> Result<Option<StoredSchedule>, MsSqlError> {
        let rows = self.fetch(&self.sql.schedule_get, params![name]).await?;
        rows.first().map(schedule_from_row).transpose()
    }

    async fn schedule_list(&self) -> Result<Vec<StoredSchedule>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.schedule_list, Params::default())
            .await?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn schedule_insert(&self, s: &StoredSchedule) -> Result<(), MsSqlError> {
        self.conn()
            .await?
            .execute(&self.sql.schedule_insert, schedule_insert_values(s))
            .await?;
        Ok(())
    }

    async fn schedule_update(&self, s: &StoredSchedule, version: i64) -> Result<u64, MsSqlError> {
        self.conn()
            .await?
            .execute(
                &self.sql.schedule_update,
                schedule_update_values(s, version),
            )
            .await
    }

    async fn schedule_touch(
        &self,
        name: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<u64, MsSqlError> {
        self.conn()
            .await?
            .execute(&self.sql.schedule_touch, params![name, expires_at])
            .await
    }

    async fn schedule_advance(
        &self,
        target: Target<'_, MsSqlTransaction>,
        p: ScheduleAdvance<'_>,
    ) -> Result<u64, MsSqlError> {
        let params = params![p.name, p.version, p.last_slot, p.last_job, p.now];
        match target {
            Target::Pool => {
                self.conn()
                    .await?
                    .execute(&self.sql.schedule_advance, params)
                    .await
            }
            Target::Tx(tx) => {
                tx.connection()
                    .execute(&self.sql.schedule_advance, params)
                    .await
            }
        }
    }

    async fn schedule_delete(&self, name: &str, version: i64) -> Result<u64, MsSqlError> {
        self.conn()
            .await?
            .execute(&self.sql.schedule_delete, params![name, version])
            .await
    }
}
