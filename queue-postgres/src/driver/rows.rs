//! Decoding the dialect's rows and building the values its statements bind.

use std::time::Duration;

use queue_core::engine::{rate_limit_of, StoredSchedule, StoredWorkflow};
use queue_core::workflow::WorkflowId;
use queue_core::{Job, JobId, JobState, Leased, QueueControl};
use serde_json::value::RawValue;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::{Postgres, Row};
use uuid::Uuid;

pub(super) fn decode(what: String) -> sqlx::Error {
    sqlx::Error::Decode(what.into())
}

pub(super) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub(super) fn unsigned(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

pub(crate) fn signed(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

pub(super) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(super) fn parse_state(s: &str) -> Result<JobState, sqlx::Error> {
    s.parse()
        .map_err(|_| decode(format!("unknown job state {s:?} in the jobs table")))
}

/// A job row as returned by `RETURNING j.id, ...` / `SELECT j.id, ...`, with its lease token
/// (its step and dependencies are read by `job_get`, `workflow_jobs` and `job_deps` only).
pub(super) fn job_from_row(row: &PgRow) -> Result<(Job, Option<Uuid>), sqlx::Error> {
    let state: String = row.try_get("state")?;
    let Json(payload): Json<Box<RawValue>> = row.try_get("payload")?;
    let job = Job {
        id: JobId(row.try_get("id")?),
        queue: row.try_get("queue")?,
        payload,
        priority: row.try_get("priority")?,
        state: parse_state(&state)?,
        attempts: unsigned(row.try_get("attempts")?),
        max_attempts: unsigned(row.try_get("max_attempts")?),
        run_at: row.try_get("run_at")?,
        lease_expires_at: row.try_get("lease_expires_at")?,
        worker: row.try_get("worker")?,
        last_error: row.try_get("last_error")?,
        dedup_key: row.try_get("dedup_key")?,
        kind: row.try_get("kind")?,
        meta: row
            .try_get::<Option<Json<Box<RawValue>>>, _>("meta")?
            .map(|Json(m)| m),
        timeout: row
            .try_get::<Option<i64>, _>("timeout_us")?
            .map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0))),
        snoozes: unsigned(row.try_get("snoozes")?),
        errors: Vec::new(),
        output: None,
        workflow: row
            .try_get::<Option<Uuid>, _>("workflow_id")?
            .map(WorkflowId),
        step: None,
        blocked_by: row.try_get::<Option<Uuid>, _>("blocked_by")?.map(JobId),
        depends_on: Vec::new(),
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        finished_at: row.try_get("finished_at")?,
    };
    Ok((job, row.try_get("lease_token")?))
}

/// A row of `job_get`: a job with its error history, output and step.
pub(super) fn job_detail_from_row(row: &PgRow) -> Result<Job, sqlx::Error> {
    let (mut job, _) = job_from_row(row)?;
    job.step = row.try_get("step")?;
    if let Some(Json(errors)) = row.try_get::<Option<Json<Box<RawValue>>>, _>("errors")? {
        job.errors = queue_core::job::parse_errors(errors.get()).map_err(decode)?;
    }
    job.output = row
        .try_get::<Option<Json<Box<RawValue>>>, _>("output")?
        .map(|Json(o)| o);
    Ok(job)
}

/// A schedule row (`schedule_get`, `schedule_list`).
pub(super) fn schedule_from_row(row: &PgRow) -> Result<StoredSchedule, sqlx::Error> {
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
        since: row.try_get("since")?,
        last_slot: row.try_get("last_slot")?,
        last_job: last_job.map(JobId),
        expires_at: row.try_get("expires_at")?,
        version: row.try_get("version")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        last_job_state: state.as_deref().map(parse_state).transpose()?,
    })
}

/// A row of `workflows` (`workflow_lock`, `workflow_get`, `workflow_list`).
pub(super) fn workflow_from_row(row: &PgRow) -> Result<StoredWorkflow, sqlx::Error> {
    Ok(StoredWorkflow {
        id: WorkflowId(row.try_get("id")?),
        name: row.try_get("name")?,
        open: row.try_get("open")?,
        callback: row.try_get::<Option<Uuid>, _>("callback")?.map(JobId),
        created_at: row.try_get("created_at")?,
    })
}

/// `schedule_insert` and `schedule_update` bind the same 15 columns first.
pub(super) fn bind_schedule<'q>(
    q: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    s: &'q StoredSchedule,
) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
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
        .bind(s.since)
        .bind(s.last_slot)
        .bind(s.last_job.map(|j| j.0))
        .bind(s.expires_at)
        .bind(s.version)
}

/// Claimed rows as jobs with their leases.
pub(super) fn leased<'r>(
    rows: impl IntoIterator<Item = &'r PgRow>,
) -> Result<Vec<Leased>, sqlx::Error> {
    rows.into_iter()
        .map(|row| {
            let (job, token) = job_from_row(row)?;
            let token = token
                .ok_or_else(|| decode(format!("claimed job {} has no lease token", job.id)))?;
            Leased::from_claimed(job, token).map_err(|e| decode(e.to_string()))
        })
        .collect()
}

/// A row of `queue_control_*`.
pub(super) fn control(row: &PgRow) -> Result<QueueControl, sqlx::Error> {
    let limit: Option<i32> = row.try_get("concurrency_limit")?;
    let key_limit: Option<i32> = row.try_get("key_limit")?;
    let rate: Option<i32> = row.try_get("rate_limit")?;
    let period: Option<i64> = row.try_get("rate_period_us")?;
    Ok(QueueControl {
        queue: row.try_get("name")?,
        paused: row.try_get("paused")?,
        concurrency_limit: limit.and_then(|n| u32::try_from(n).ok()),
        rate_limit: rate_limit_of(rate.map(i64::from), period),
        key_limit: key_limit.and_then(|n| u32::try_from(n).ok()),
        fair_shares: row.try_get("fair_shares")?,
        key_cursor: row.try_get("key_cursor")?,
        key_rate_limit: rate_limit_of(
            row.try_get::<Option<i32>, _>("key_rate_limit")?
                .map(i64::from),
            row.try_get("key_rate_period_us")?,
        ),
    })
}
