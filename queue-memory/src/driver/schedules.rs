//! The in-memory store's [`Schedules`](queue_core::engine::Schedules) implementation: the stored
//! periodic jobs.

use async_trait::async_trait;
use chrono::{DateTime, SubsecRound, Utc};
use queue_core::engine::{ScheduleAdvance, Schedules, StoredSchedule, Target};

use crate::error::MemoryError;
use crate::faults::Statement;
use crate::store::MemoryTx;

use super::{schedule_read, schedule_stored, MemoryDriver, Result};

#[async_trait]
impl Schedules for MemoryDriver {
    /// One schedule, with the state of its last slot's job.
    async fn schedule_get(&self, name: &str) -> Result<Option<StoredSchedule>> {
        let _call = self.enter(Statement::ScheduleGet).await?;
        self.read(|t, _| {
            t.schema()?
                .schedules
                .get(name)
                .map(|s| schedule_read(t, s))
                .transpose()
        })
        .await
    }

    /// Every schedule by name, each with the state of its last slot's job.
    async fn schedule_list(&self) -> Result<Vec<StoredSchedule>> {
        let _call = self.enter(Statement::ScheduleList).await?;
        self.read(|t, _| {
            t.schema()?
                .schedules
                .values()
                .map(|s| schedule_read(t, s))
                .collect()
        })
        .await
    }

    /// A new schedule; refused when one of that name exists.
    async fn schedule_insert(&self, s: &StoredSchedule) -> Result<()> {
        let _call = self.enter(Statement::ScheduleInsert).await?;
        self.pool(|w, _| {
            if w.schema()?.schedules.contains_key(&s.name) {
                return Err(MemoryError::ScheduleExists(s.name.clone()));
            }
            w.put_schedule(&s.name, Some(schedule_stored(s)))
        })
        .await
    }

    /// Writes every column of `s` but `created_at` if the row still has `version`; rows changed.
    async fn schedule_update(&self, s: &StoredSchedule, version: i64) -> Result<u64> {
        let _call = self.enter(Statement::ScheduleUpdate).await?;
        self.pool(|w, _| {
            let Some(old) = w
                .schema()?
                .schedules
                .get(&s.name)
                .filter(|old| old.version == version)
            else {
                return Ok(0);
            };
            let row = StoredSchedule {
                created_at: old.created_at,
                ..schedule_stored(s)
            };
            w.put_schedule(&s.name, Some(row))?;
            Ok(1)
        })
        .await
    }

    /// Moves the lease of the code schedule `name` to `expires_at`, never earlier than it is,
    /// its version untouched; rows changed.
    async fn schedule_touch(&self, name: &str, expires_at: DateTime<Utc>) -> Result<u64> {
        let _call = self.enter(Statement::ScheduleTouch).await?;
        self.pool(|w, _| {
            let Some(mut row) = w
                .schema()?
                .schedules
                .get(name)
                .filter(|s| s.origin == "code")
                .cloned()
            else {
                return Ok(0);
            };
            let asked = expires_at.trunc_subsecs(6);
            row.expires_at = Some(row.expires_at.map_or(asked, |t| t.max(asked)));
            w.put_schedule(name, Some(row))?;
            Ok(1)
        })
        .await
    }

    /// The slot compare-and-set: if the schedule still has `p.version`, its last slot and last
    /// job become `p`'s and its version moves on; rows changed.
    async fn schedule_advance(
        &self,
        target: Target<'_, MemoryTx>,
        p: ScheduleAdvance<'_>,
    ) -> Result<u64> {
        let _call = self.enter(Statement::ScheduleAdvance).await?;
        self.on(target, |w, _| {
            let Some(mut row) = w
                .schema()?
                .schedules
                .get(p.name)
                .filter(|s| s.version == p.version)
                .cloned()
            else {
                return Ok(0);
            };
            row.last_slot = Some(p.last_slot.trunc_subsecs(6));
            row.last_job = Some(p.last_job);
            row.version += 1;
            row.updated_at = p.now.trunc_subsecs(6);
            w.put_schedule(p.name, Some(row))?;
            Ok(1)
        })
        .await
    }

    /// Deletes the schedule `name` if it still has `version`; rows deleted.
    async fn schedule_delete(&self, name: &str, version: i64) -> Result<u64> {
        let _call = self.enter(Statement::ScheduleDelete).await?;
        self.pool(|w, _| {
            let current = w
                .schema()?
                .schedules
                .get(name)
                .is_some_and(|s| s.version == version);
            if !current {
                return Ok(0);
            }
            w.put_schedule(name, None)?;
            Ok(1)
        })
        .await
    }
}
