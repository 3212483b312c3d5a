//! Decoding the dialect's rows and building the values its statements bind.

use std::time::Duration;

use chrono::{DateTime, Utc};
use queue_core::engine::{micros, rate_limit_of, StoredSchedule, StoredWorkflow};
use queue_core::{Job, JobId, JobState, Leased, QueueControl, WorkflowId};
use serde_json::value::RawValue;
use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, Row, SqlSafeStr, SqlStr, Sqlite};
use uuid::Uuid;

/// The host clock in microseconds since the Unix epoch: SQLite's "database clock".
pub(crate) fn now_micros() -> i64 {
    Utc::now().timestamp_micros()
}

/// `now` (microseconds) as the RFC 3339 text an error history entry carries.
pub(super) fn rfc3339(now: i64) -> String {
    DateTime::from_timestamp_micros(now)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// JSON text of a column, checked.
pub(super) fn json_column(
    text: Option<String>,
    column: &str,
) -> Result<Option<Box<RawValue>>, sqlx::Error> {
    text.map(|t| {
        RawValue::from_string(t).map_err(|e| decode(format!("stored {column} is not JSON: {e}")))
    })
    .transpose()
}

pub(super) fn decode(what: String) -> sqlx::Error {
    sqlx::Error::Decode(what.into())
}

pub(super) fn to_time(us: i64) -> Result<DateTime<Utc>, sqlx::Error> {
    DateTime::from_timestamp_micros(us)
        .ok_or_else(|| decode(format!("timestamp out of range: {us} µs")))
}

pub(super) fn to_time_opt(us: Option<i64>) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    us.map(to_time).transpose()
}

pub(super) fn to_u32(v: i64, column: &str) -> Result<u32, sqlx::Error> {
    u32::try_from(v).map_err(|_| decode(format!("{column} out of range: {v}")))
}

pub(super) fn parse_state(s: &str) -> Result<JobState, sqlx::Error> {
    s.parse()
        .map_err(|_| decode(format!("unknown job state {s:?}")))
}

pub(super) fn json_array(items: &[&str]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".to_owned())
}

/// A schedule row (`schedule_get`, `schedule_list`).
pub(super) fn schedule_from_row(row: &SqliteRow) -> Result<StoredSchedule, sqlx::Error> {
    let state: Option<String> = row.try_get("last_job_state")?;
    let last_job: Option<Uuid> = row.try_get("last_job")?;
    Ok(StoredSchedule {
        name: row.try_get("name")?,
        expression: row.try_get("expression")?,
        time_zone: row.try_get("time_zone")?,
        queue: row.try_get("queue")?,
        kind: row.try_get("kind")?,
        payload: row.try_get("payload")?,
        priority: row.try_get("priority")?,
        max_attempts: row.try_get("max_attempts")?,
        misfire: row.try_get("misfire")?,
        misfire_max: row.try_get("misfire_max")?,
        origin: row.try_get("origin")?,
        since: to_time(row.try_get("since")?)?,
        last_slot: to_time_opt(row.try_get("last_slot")?)?,
        last_job: last_job.map(JobId),
        expires_at: to_time_opt(row.try_get("expires_at")?)?,
        version: row.try_get("version")?,
        created_at: to_time(row.try_get("created_at")?)?,
        updated_at: to_time(row.try_get("updated_at")?)?,
        last_job_state: state.as_deref().map(parse_state).transpose()?,
    })
}

/// `schedule_insert` and `schedule_update` bind the same 15 columns first.
pub(super) fn bind_schedule<'q>(
    q: sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments>,
    s: &'q StoredSchedule,
) -> sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments> {
    q.bind(&s.name)
        .bind(&s.expression)
        .bind(&s.time_zone)
        .bind(&s.queue)
        .bind(&s.payload)
        .bind(s.priority)
        .bind(s.max_attempts)
        .bind(&s.misfire)
        .bind(s.misfire_max)
        .bind(&s.origin)
        .bind(s.since.timestamp_micros())
        .bind(s.last_slot.map(|t| t.timestamp_micros()))
        .bind(s.last_job.map(|j| j.0))
        .bind(s.expires_at.map(|t| t.timestamp_micros()))
        .bind(s.version)
}

/// A full job row (the columns every job-returning statement selects) as a [`Job`], plus its
/// lease token.
pub(super) fn job_from_row(row: &SqliteRow) -> Result<(Job, Option<Uuid>), sqlx::Error> {
    let payload: String = row.try_get("payload")?;
    let payload = RawValue::from_string(payload)
        .map_err(|e| decode(format!("stored payload is not JSON: {e}")))?;
    let job = Job {
        id: JobId(row.try_get("id")?),
        queue: row.try_get("queue")?,
        payload,
        priority: row.try_get("priority")?,
        state: parse_state(row.try_get("state")?)?,
        attempts: to_u32(row.try_get("attempts")?, "attempts")?,
        max_attempts: to_u32(row.try_get("max_attempts")?, "max_attempts")?,
        run_at: to_time(row.try_get("run_at")?)?,
        lease_expires_at: to_time_opt(row.try_get("lease_expires_at")?)?,
        worker: row.try_get("worker")?,
        last_error: row.try_get("last_error")?,
        dedup_key: row.try_get("dedup_key")?,
        kind: row.try_get("kind")?,
        meta: json_column(row.try_get("meta")?, "meta")?,
        timeout: row
            .try_get::<Option<i64>, _>("timeout_us")?
            .map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0))),
        snoozes: to_u32(row.try_get("snoozes")?, "snoozes")?,
        errors: Vec::new(),
        output: None,
        workflow: row
            .try_get::<Option<Uuid>, _>("workflow_id")?
            .map(queue_core::WorkflowId),
        step: None,
        blocked_by: row.try_get::<Option<Uuid>, _>("blocked_by")?.map(JobId),
        depends_on: Vec::new(),
        created_at: to_time(row.try_get("created_at")?)?,
        updated_at: to_time(row.try_get("updated_at")?)?,
        finished_at: to_time_opt(row.try_get("finished_at")?)?,
    };
    Ok((job, row.try_get("lease_token")?))
}

/// A row of `job_get`: a job with its error history and output.
pub(super) fn job_detail_from_row(row: &SqliteRow) -> Result<Job, sqlx::Error> {
    let (mut job, _) = job_from_row(row)?;
    if let Some(errors) = row.try_get::<Option<String>, _>("errors")? {
        job.errors = queue_core::job::parse_errors(&errors).map_err(decode)?;
    }
    job.output = json_column(row.try_get("output")?, "output")?;
    job.step = row.try_get("step")?;
    Ok(job)
}

/// A claimed row as a [`Leased`].
pub(super) fn leased_from_row(row: &SqliteRow) -> Result<Leased, sqlx::Error> {
    let (job, token) = job_from_row(row)?;
    let token =
        token.ok_or_else(|| decode(format!("claimed job {} has no lease token", job.id)))?;
    Leased::from_claimed(job, token).map_err(|e| decode(e.to_string()))
}

/// Splits a statement whose last part is `VALUES\n(tuple)[\n...]` and repeats the tuple `rows`
/// times, for a multi-row statement. Only placeholders are repeated; values are bound.
pub(super) fn repeat_tuple(statement: &str, rows: usize) -> String {
    let start = statement
        .rfind("VALUES\n")
        .map_or(0, |i| i + "VALUES\n".len());
    let end = statement[start..]
        .find(')')
        .map_or(statement.len(), |i| start + i + 1);
    let (head, tuple, tail) = (
        &statement[..start],
        &statement[start..end],
        &statement[end..],
    );
    let mut out = String::with_capacity(head.len() + rows * (tuple.len() + 1) + tail.len());
    out.push_str(head);
    for i in 0..rows {
        if i > 0 {
            out.push(',');
        }
        out.push_str(tuple);
    }
    out.push_str(tail);
    out
}

/// The statement for `rows` rows: the file's text for one, the tuple repeated for more.
pub(super) fn rows_of(statement: &SqlStr, rows: usize) -> SqlStr {
    if rows == 1 {
        statement.clone()
    } else {
        AssertSqlSafe(repeat_tuple(statement.as_str(), rows)).into_sql_str()
    }
}

/// A row of `workflow_get`, `workflow_lock` or `workflow_list`.
pub(super) fn workflow_from_row(row: &SqliteRow) -> Result<StoredWorkflow, sqlx::Error> {
    Ok(StoredWorkflow {
        id: WorkflowId(row.try_get("id")?),
        name: row.try_get("name")?,
        open: row.try_get("open")?,
        callback: row.try_get::<Option<Uuid>, _>("callback")?.map(JobId),
        created_at: to_time(row.try_get("created_at")?)?,
    })
}

/// The creation time below which a job is older than `age` (`None`: any age).
pub(super) fn created_before(age: Option<Duration>) -> Option<i64> {
    age.map(|a| now_micros().saturating_sub(micros(a)))
}

/// A row of `queue_control_*`.
pub(super) fn control(row: &SqliteRow) -> Result<QueueControl, sqlx::Error> {
    let limit: Option<i64> = row.try_get("concurrency_limit")?;
    Ok(QueueControl {
        queue: row.try_get("name")?,
        paused: row.try_get("paused")?,
        concurrency_limit: limit.and_then(|n| u32::try_from(n).ok()),
        rate_limit: rate_limit_of(row.try_get("rate_limit")?, row.try_get("rate_period_us")?),
        key_limit: row
            .try_get::<Option<i64>, _>("key_limit")?
            .and_then(|n| u32::try_from(n).ok()),
        fair_shares: row.try_get("fair_shares")?,
        key_cursor: row.try_get("key_cursor")?,
        key_rate_limit: rate_limit_of(
            row.try_get("key_rate_limit")?,
            row.try_get("key_rate_period_us")?,
        ),
    })
}
