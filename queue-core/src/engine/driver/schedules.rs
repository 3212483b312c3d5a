//! [`Schedules`]: periodic jobs. A slot is claimed by `schedule_advance` and its jobs pushed by
//! `job_insert`, both inside one transaction of the driver's (`tx_begin` .. `tx_commit`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::job::{JobId, JobState};

use super::{Lifecycle, Target};

/// A row of the `schedules` table, as every `schedule_*` statement reads and writes it. Plain
/// values: the engine interprets them (`crate::periodic`), the driver only binds and decodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSchedule {
    /// Its name (the primary key).
    pub name: String,
    /// The cron expression.
    pub expression: String,
    /// The IANA time zone.
    pub time_zone: String,
    /// The queue of its jobs.
    pub queue: String,
    /// The kind of its jobs (`None`: none).
    pub kind: Option<String>,
    /// The payload of its jobs, JSON text (stored as text, so it comes back byte for byte).
    pub payload: String,
    /// The priority of its jobs.
    pub priority: i32,
    /// The attempt budget of its jobs.
    pub max_attempts: i32,
    /// `skip` or `catch_up`.
    pub misfire: String,
    /// Most slots enqueued by one tick (1 for `skip`).
    pub misfire_max: i32,
    /// `code` or `operator`.
    pub origin: String,
    /// Slots at or before this are never enqueued.
    pub since: DateTime<Utc>,
    /// The last slot enqueued.
    pub last_slot: Option<DateTime<Utc>>,
    /// The job of the last slot.
    pub last_job: Option<JobId>,
    /// A code schedule's lease; NULL for an operator's.
    pub expires_at: Option<DateTime<Utc>>,
    /// Changes at every change of the row but a lease renewal; compare-and-set matches on it.
    pub version: i64,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// Read only (`schedule_list`, `schedule_get`): the state of the last slot's job, `None`
    /// when it has none or the job was pruned.
    pub last_job_state: Option<JobState>,
}

/// `schedule_advance`: the compare-and-set that claims a schedule's due slots, run in the same
/// transaction as the push of their jobs.
#[derive(Clone, Copy, Debug)]
pub struct ScheduleAdvance<'a> {
    /// The schedule.
    pub name: &'a str,
    /// The version that was read; the row is changed only if it still has it.
    pub version: i64,
    /// The latest slot enqueued now.
    pub last_slot: DateTime<Utc>,
    /// Its job.
    pub last_job: JobId,
    /// The scheduler's now (`updated_at`).
    pub now: DateTime<Utc>,
}

/// Periodic jobs: the stored schedules and the slot each run claims.
#[async_trait]
pub trait Schedules: Lifecycle {
    /// `schedule_get`: one schedule (with its last job's state), `None` when there is none.
    async fn schedule_get(&self, name: &str) -> Result<Option<StoredSchedule>, Self::Error>;

    /// `schedule_list`: every schedule (with its last job's state), by name.
    async fn schedule_list(&self) -> Result<Vec<StoredSchedule>, Self::Error>;

    /// `schedule_insert`: a new schedule; a unique violation when the name exists.
    async fn schedule_insert(&self, s: &StoredSchedule) -> Result<(), Self::Error>;

    /// `schedule_update`: writes every column of `s` (but `created_at`) if the row still has
    /// `version`; rows changed.
    async fn schedule_update(&self, s: &StoredSchedule, version: i64) -> Result<u64, Self::Error>;

    /// `schedule_touch`: extends the lease of the code schedule `name` to `expires_at` (never
    /// shortening it), leaving its version alone; rows changed.
    async fn schedule_touch(
        &self,
        name: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<u64, Self::Error>;

    /// `schedule_advance`: the slot compare-and-set (see [`ScheduleAdvance`]); rows changed.
    async fn schedule_advance(
        &self,
        target: Target<'_, Self::Conn>,
        p: ScheduleAdvance<'_>,
    ) -> Result<u64, Self::Error>;

    /// `schedule_delete`: deletes `name` if it still has `version`; rows deleted.
    async fn schedule_delete(&self, name: &str, version: i64) -> Result<u64, Self::Error>;
}
