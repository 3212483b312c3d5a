//! Decoding the dialect's rows and building the values its statements bind.

use std::time::Duration;

use chrono::{DateTime, Utc};
use queue_core::engine::{micros, rate_limit_of, JobMatch, StoredSchedule, StoredWorkflow};
use queue_core::workflow::WorkflowId;
use queue_core::{Job, JobId, JobState, Lease, QueueControl};
use serde_json::value::RawValue;
use sqlx::mysql::MySqlRow;
use sqlx::{MySql, Row};
use uuid::Uuid;

pub(super) fn decode(msg: String) -> sqlx::Error {
    sqlx::Error::Decode(msg.into())
}

/// [`Lease::expiry`] of a lease granted at `now`; past the last time there is, an error (a
/// claim refuses rather than hand out a lease that never ends).
pub(super) fn lease_expiry(now: DateTime<Utc>, d: Duration) -> Result<DateTime<Utc>, sqlx::Error> {
    Lease::expiry(now, d).ok_or_else(|| {
        sqlx::Error::Protocol(format!(
            "a lease of {d:?} from {now} ends past the last time there is"
        ))
    })
}

/// Binds the filter of `job_ids` / `job_count`: queue, states, kind, age.
pub(super) fn bind_match<'q>(
    mut q: sqlx::query::Query<'q, MySql, sqlx::mysql::MySqlArguments>,
    m: &JobMatch<'q>,
) -> sqlx::query::Query<'q, MySql, sqlx::mysql::MySqlArguments> {
    q = q.bind(m.queue).bind(m.queue);
    for s in m.states {
        q = q.bind(s.as_str());
    }
    let age = m.older_than.map(micros);
    q.bind(m.kind).bind(m.kind).bind(age).bind(age)
}

pub(super) fn text(row: &MySqlRow, col: &str) -> Result<String, sqlx::Error> {
    // Columns with a binary collation or type carry the BINARY flag, which the driver's type
    // check reads as "bytes"; the text is UTF-8 all the same.
    row.try_get_unchecked::<String, _>(col)
}

pub(super) fn opt_text(row: &MySqlRow, col: &str) -> Result<Option<String>, sqlx::Error> {
    row.try_get_unchecked::<Option<String>, _>(col)
}

/// A nullable BINARY(16) column as a UUID.
pub(super) fn opt_uuid(row: &MySqlRow, col: &str) -> Result<Option<Uuid>, sqlx::Error> {
    row.try_get::<Option<Uuid>, _>(col)
}

pub(super) fn payload(row: &MySqlRow) -> Result<Box<RawValue>, sqlx::Error> {
    RawValue::from_string(text(row, "payload")?)
        .map_err(|e| decode(format!("stored payload is not JSON: {e}")))
}

/// JSON text of an optional column, checked.
pub(super) fn json_column(row: &MySqlRow, col: &str) -> Result<Option<Box<RawValue>>, sqlx::Error> {
    opt_text(row, col)?
        .map(|t| {
            RawValue::from_string(t).map_err(|e| decode(format!("stored {col} is not JSON: {e}")))
        })
        .transpose()
}

pub(super) fn timeout(row: &MySqlRow) -> Result<Option<Duration>, sqlx::Error> {
    Ok(row
        .try_get::<Option<i64>, _>("timeout_us")?
        .map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0))))
}

pub(super) fn parse_state(s: &str) -> Result<JobState, sqlx::Error> {
    s.parse()
        .map_err(|_| decode(format!("unknown job state {s:?}")))
}

/// A schedule row (`schedule_get`, `schedule_list`).
pub(super) fn schedule_from_row(row: &MySqlRow) -> Result<StoredSchedule, sqlx::Error> {
    let last_job: Option<Uuid> = row.try_get("last_job")?;
    Ok(StoredSchedule {
        name: text(row, "name")?,
        expression: text(row, "expression")?,
        time_zone: text(row, "time_zone")?,
        queue: text(row, "queue")?,
        kind: opt_text(row, "kind")?,
        payload: text(row, "payload")?,
        priority: row.try_get("priority")?,
        max_attempts: row.try_get("max_attempts")?,
        misfire: text(row, "misfire")?,
        misfire_max: row.try_get("misfire_max")?,
        origin: text(row, "origin")?,
        since: row.try_get("since")?,
        last_slot: row.try_get("last_slot")?,
        last_job: last_job.map(JobId),
        expires_at: row.try_get("expires_at")?,
        version: row.try_get("version")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        last_job_state: opt_text(row, "last_job_state")?
            .as_deref()
            .map(parse_state)
            .transpose()?,
    })
}

/// The 14 columns after the name that `schedule_insert` and `schedule_update` bind in order.
pub(super) fn bind_definition<'q>(
    q: sqlx::query::Query<'q, MySql, sqlx::mysql::MySqlArguments>,
    s: &'q StoredSchedule,
) -> sqlx::query::Query<'q, MySql, sqlx::mysql::MySqlArguments> {
    q.bind(&s.expression)
        .bind(&s.time_zone)
        .bind(&s.queue)
        .bind(&s.payload)
        .bind(s.priority)
        .bind(s.max_attempts)
        .bind(&s.misfire)
        .bind(s.misfire_max)
        .bind(&s.origin)
        .bind(s.since)
        .bind(s.last_slot)
        .bind(s.last_job.map(|j| j.0))
        .bind(s.expires_at)
        .bind(s.version)
}

/// A row of `job_get`, `job_list` or `workflow_jobs`: the whole job, with its error history and
/// output (NULL in `job_list` and `workflow_jobs`, which leave them to `job_get`) and its step
/// (NULL in `job_list`); `depends_on` is left to `job_deps`.
pub(super) fn job_from_row(row: &MySqlRow) -> Result<Job, sqlx::Error> {
    let errors = match opt_text(row, "errors")? {
        Some(text) => queue_core::job::parse_errors(&text).map_err(decode)?,
        None => Vec::new(),
    };
    Ok(Job {
        id: JobId(row.try_get("id")?),
        queue: text(row, "queue")?,
        payload: payload(row)?,
        priority: row.try_get("priority")?,
        state: parse_state(&text(row, "state")?)?,
        attempts: row.try_get("attempts")?,
        max_attempts: row.try_get("max_attempts")?,
        run_at: row.try_get("run_at")?,
        lease_expires_at: row.try_get("lease_expires_at")?,
        worker: opt_text(row, "worker")?,
        last_error: opt_text(row, "last_error")?,
        dedup_key: opt_text(row, "dedup_key")?,
        kind: opt_text(row, "kind")?,
        meta: json_column(row, "meta")?,
        timeout: timeout(row)?,
        snoozes: row.try_get("snoozes")?,
        errors,
        output: json_column(row, "output")?,
        workflow: opt_uuid(row, "workflow_id")?.map(WorkflowId),
        step: opt_text(row, "step")?,
        blocked_by: opt_uuid(row, "blocked_by")?.map(JobId),
        depends_on: Vec::new(),
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}

/// A row of `workflow_get`, `workflow_lock` or `workflow_list`.
pub(super) fn workflow_from_row(row: &MySqlRow) -> Result<StoredWorkflow, sqlx::Error> {
    Ok(StoredWorkflow {
        id: WorkflowId(row.try_get("id")?),
        name: opt_text(row, "name")?,
        open: row.try_get("open")?,
        callback: opt_uuid(row, "callback")?.map(JobId),
        created_at: row.try_get("created_at")?,
    })
}

/// `ids` in ascending order without repeats, so that statements over several chunks of them
/// lock rows in one global order.
pub(super) fn sorted_ids(ids: &[JobId]) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The rows an UPDATE by ids changed must be the rows its locking SELECT locked.
pub(super) fn check_locked(what: &str, changed: u64, locked: usize) -> Result<(), sqlx::Error> {
    if changed == locked as u64 {
        return Ok(());
    }
    // Cannot happen while the rows are locked; refuse rather than report what was not done.
    Err(sqlx::Error::Protocol(format!(
        "{what} updated {changed} of {locked} locked rows"
    )))
}

/// A concurrency key as stored (VARBINARY: the UTF-8 bytes the driver bound).
pub(super) fn key_text(bytes: Vec<u8>) -> Result<String, sqlx::Error> {
    String::from_utf8(bytes)
        .map_err(|e| decode(format!("stored concurrency key is not UTF-8: {e}")))
}

/// A row of `queue_control_*`.
pub(super) fn control(row: &MySqlRow) -> Result<QueueControl, sqlx::Error> {
    let limit: Option<i32> = row.try_get("concurrency_limit")?;
    let rate: Option<i32> = row.try_get("rate_limit")?;
    let key_limit: Option<i32> = row.try_get("key_limit")?;
    let cursor: Option<Vec<u8>> = row.try_get("key_cursor")?;
    Ok(QueueControl {
        queue: row.try_get("name")?,
        paused: row.try_get("paused")?,
        concurrency_limit: limit.and_then(|n| u32::try_from(n).ok()),
        rate_limit: rate_limit_of(rate.map(i64::from), row.try_get("rate_period_us")?),
        key_limit: key_limit.and_then(|n| u32::try_from(n).ok()),
        fair_shares: row.try_get("fair_shares")?,
        key_cursor: cursor.map(key_text).transpose()?,
        key_rate_limit: rate_limit_of(
            row.try_get::<Option<i32>, _>("key_rate_limit")?
                .map(i64::from),
            row.try_get("key_rate_period_us")?,
        ),
    })
}
