//! [`MsSqlDriver`]: the SQL Server statements behind the engine.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::statements::load;
use queue_core::engine::{
    micros, rate_limit_of, Driver, DriverFault, Expired, JobClaim, JobComplete, JobFailDead,
    JobFailRetry, JobInsert, JobInsertUnique, JobMatch, JobMetaSet, JobPrune, JobReschedule,
    JobRescue, JobSnooze, JobUniqueReplace, Migration, RateState, ScheduleAdvance, StoredMeta,
    StoredSchedule, StoredWorkflow, Target, UniqueIndex, UniqueInsert, WorkflowEdge,
    WorkflowInsert, WorkflowPrune, WorkflowPruneLock, WorkflowPruned,
};
use queue_core::{
    DepPolicy, Dependency, Job, JobId, JobState, Lease, Leased, ListRequest, QueueControl,
    QueueStats, WorkflowId,
};
use serde_json::value::RawValue;
use tiberius::Row;
use uuid::Uuid;

use crate::bind::{params, Params};
use crate::error::MsSqlError;
use crate::migrate::{lock_name, LOCK_TIMEOUT_MS, MIGRATIONS};
use crate::pool::{MsSqlConnection, MsSqlTransaction, Pool};
use crate::sql::{
    dateadd_parts, Statements, BULK_IDS, INSERT_ROWS, INSERT_VALUES, IN_LIST,
    MAX_ROWS_PER_STATEMENT, PAIR_ROWS, WORKFLOW_ROWS,
};

/// The name of the savepoints the engine sets inside a transaction (`SAVE TRANSACTION`; a
/// rollback goes to the latest of that name).
const SAVEPOINT: &str = "queue_push";

/// The SQL Server driver behind [`crate::MsSqlQueue`]: a pool and the schema's statements.
/// Reached through [`queue_core::Backend::engine`]; its statements are its only logic.
#[derive(Debug)]
pub struct MsSqlDriver {
    pub(crate) pool: Pool,
    pub(crate) schema: String,
    pub(crate) sql: Statements,
}

/// A due pending job read by the optimistic claim: its id and row version.
#[derive(Clone, Debug)]
pub struct Candidate {
    id: Vec<u8>,
    version: Vec<u8>,
}

fn decode(what: impl Into<String>) -> MsSqlError {
    MsSqlError::Decode(what.into())
}

fn bytes<'r>(row: &'r Row, col: &str) -> Result<Option<&'r [u8]>, MsSqlError> {
    Ok(row.try_get::<&[u8], _>(col)?)
}

fn uuid_of(row: &Row, col: &str) -> Result<Uuid, MsSqlError> {
    opt_uuid(row, col)?.ok_or_else(|| decode(format!("{col} is NULL")))
}

/// An id column that may be NULL (`workflow_id`, `blocked_by`, `callback`).
fn opt_uuid(row: &Row, col: &str) -> Result<Option<Uuid>, MsSqlError> {
    bytes(row, col)?
        .map(|b| {
            Uuid::from_slice(b).map_err(|_| decode(format!("{col} has {} bytes, not 16", b.len())))
        })
        .transpose()
}

fn opt_text(row: &Row, col: &str) -> Result<Option<String>, MsSqlError> {
    Ok(row.try_get::<&str, _>(col)?.map(str::to_owned))
}

fn text(row: &Row, col: &str) -> Result<String, MsSqlError> {
    opt_text(row, col)?.ok_or_else(|| decode(format!("{col} is NULL")))
}

fn int(row: &Row, col: &str) -> Result<i32, MsSqlError> {
    row.try_get::<i32, _>(col)?
        .ok_or_else(|| decode(format!("{col} is NULL")))
}

fn count(row: &Row, col: &str) -> Result<u64, MsSqlError> {
    Ok(row
        .try_get::<i64, _>(col)?
        .map_or(0, |n| u64::try_from(n).unwrap_or(0)))
}

fn unsigned(row: &Row, col: &str) -> Result<u32, MsSqlError> {
    Ok(u32::try_from(int(row, col)?).unwrap_or(0))
}

fn opt_time(row: &Row, col: &str) -> Result<Option<DateTime<Utc>>, MsSqlError> {
    Ok(row.try_get::<DateTime<Utc>, _>(col)?)
}

fn time(row: &Row, col: &str) -> Result<DateTime<Utc>, MsSqlError> {
    opt_time(row, col)?.ok_or_else(|| decode(format!("{col} is NULL")))
}

fn parse_state(s: &str) -> Result<JobState, MsSqlError> {
    s.parse()
        .map_err(|_| decode(format!("unknown job state {s:?} in the jobs table")))
}

/// A dedup key as stored: its UTF-8 bytes.
fn dedup_key(row: &Row) -> Result<Option<String>, MsSqlError> {
    bytes(row, "dedup_key")?
        .map(|b| String::from_utf8(b.to_vec()).map_err(|_| decode("a dedup key is not UTF-8")))
        .transpose()
}

/// A concurrency key as stored (`concurrency_key`, `key_cursor`, `next_key`): its UTF-8 bytes.
fn key_column(row: &Row, col: &str) -> Result<Option<String>, MsSqlError> {
    bytes(row, col)?
        .map(|b| {
            String::from_utf8(b.to_vec())
                .map_err(|_| decode(format!("a concurrency key ({col}) is not UTF-8")))
        })
        .transpose()
}

/// JSON text of an optional column, checked.
fn json_column(row: &Row, col: &str) -> Result<Option<Box<RawValue>>, MsSqlError> {
    opt_text(row, col)?
        .map(|t| {
            RawValue::from_string(t).map_err(|e| decode(format!("a stored {col} is not JSON: {e}")))
        })
        .transpose()
}

/// A job row (`SELECT` or `OUTPUT inserted.` of the claim's columns), with its lease token.
pub(crate) fn job_from_row(row: &Row) -> Result<(Job, Option<Uuid>), MsSqlError> {
    let payload = RawValue::from_string(text(row, "payload")?)
        .map_err(|e| decode(format!("a stored payload is not JSON: {e}")))?;
    let job = Job {
        id: JobId(uuid_of(row, "id")?),
        queue: text(row, "queue")?,
        payload,
        priority: int(row, "priority")?,
        state: parse_state(&text(row, "state")?)?,
        attempts: unsigned(row, "attempts")?,
        max_attempts: unsigned(row, "max_attempts")?,
        run_at: time(row, "run_at")?,
        lease_expires_at: opt_time(row, "lease_expires_at")?,
        worker: opt_text(row, "worker")?,
        last_error: opt_text(row, "last_error")?,
        dedup_key: dedup_key(row)?,
        kind: opt_text(row, "kind")?,
        meta: json_column(row, "meta")?,
        timeout: row
            .try_get::<i64, _>("timeout_us")?
            .map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0))),
        // NULL (a row from before the column existed) counts as 0.
        snoozes: row
            .try_get::<i32, _>("snoozes")?
            .map_or(0, |n| u32::try_from(n).unwrap_or(0)),
        errors: Vec::new(),
        output: None,
        workflow: opt_uuid(row, "workflow_id")?.map(WorkflowId),
        // Read by job_get and workflow_jobs only, which add the column.
        step: None,
        blocked_by: opt_uuid(row, "blocked_by")?.map(JobId),
        // Filled by the engine from job_deps.
        depends_on: Vec::new(),
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
        finished_at: opt_time(row, "finished_at")?,
    };
    let token = row.try_get::<Uuid, _>("lease_token")?;
    Ok((job, token))
}

/// A row of `job_get`: the job with its error history, output and step name.
pub(crate) fn job_detail_from_row(row: &Row) -> Result<Job, MsSqlError> {
    let (mut job, _) = job_from_row(row)?;
    if let Some(errors) = opt_text(row, "errors")? {
        job.errors = queue_core::job::parse_errors(&errors).map_err(decode)?;
    }
    job.output = json_column(row, "output")?;
    job.step = opt_text(row, "step")?;
    Ok(job)
}

/// Claimed rows (from `OUTPUT`) as jobs with their leases, in no particular order.
pub(crate) fn leased(rows: &[Row]) -> Result<Vec<Leased>, MsSqlError> {
    rows.iter()
        .map(|row| {
            let (job, token) = job_from_row(row)?;
            let token = token
                .ok_or_else(|| decode(format!("claimed job {} has no lease token", job.id)))?;
            Leased::from_claimed(job, token).map_err(|e| decode(e.to_string()))
        })
        .collect()
}

/// A schedule row (`schedule_get`, `schedule_list`).
fn schedule_from_row(row: &Row) -> Result<StoredSchedule, MsSqlError> {
    let last_job = match bytes(row, "last_job")? {
        Some(b) => Some(JobId(Uuid::from_slice(b).map_err(|_| {
            decode(format!("last_job has {} bytes, not 16", b.len()))
        })?)),
        None => None,
    };
    Ok(StoredSchedule {
        name: text(row, "name")?,
        expression: text(row, "expression")?,
        time_zone: text(row, "time_zone")?,
        queue: text(row, "queue")?,
        kind: opt_text(row, "kind")?,
        payload: text(row, "payload")?,
        priority: int(row, "priority")?,
        max_attempts: int(row, "max_attempts")?,
        misfire: text(row, "misfire")?,
        misfire_max: int(row, "misfire_max")?,
        origin: text(row, "origin")?,
        since: time(row, "since")?,
        last_slot: opt_time(row, "last_slot")?,
        last_job,
        expires_at: opt_time(row, "expires_at")?,
        version: row
            .try_get::<i64, _>("version")?
            .ok_or_else(|| decode("version is NULL"))?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
        last_job_state: opt_text(row, "last_job_state")?
            .as_deref()
            .map(parse_state)
            .transpose()?,
    })
}

/// A row of `queue_control_*`.
fn control(row: &Row) -> Result<QueueControl, MsSqlError> {
    let limit = row.try_get::<i32, _>("concurrency_limit")?;
    let rate = row.try_get::<i32, _>("rate_limit")?;
    let period = row.try_get::<i64, _>("rate_period_us")?;
    let key_limit = row.try_get::<i32, _>("key_limit")?;
    Ok(QueueControl {
        queue: text(row, "name")?,
        paused: row
            .try_get::<bool, _>("paused")?
            .ok_or_else(|| decode("paused is NULL"))?,
        concurrency_limit: limit.and_then(|n| u32::try_from(n).ok()),
        rate_limit: rate_limit_of(rate.map(i64::from), period),
        key_limit: key_limit.and_then(|n| u32::try_from(n).ok()),
        fair_shares: row
            .try_get::<bool, _>("fair_shares")?
            .ok_or_else(|| decode("fair_shares is NULL"))?,
        key_cursor: key_column(row, "key_cursor")?,
        key_rate_limit: rate_limit_of(
            row.try_get::<i32, _>("key_rate_limit")?.map(i64::from),
            row.try_get::<i64, _>("key_rate_period_us")?,
        ),
    })
}

/// The row of `queue_rate_state`.
fn rate_state(row: &Row) -> Result<RateState, MsSqlError> {
    Ok(RateState {
        window: row.try_get::<i64, _>("rate_window")?,
        count: unsigned(row, "rate_count")?,
        now_us: row
            .try_get::<i64, _>("now_us")?
            .ok_or_else(|| decode("now_us is NULL"))?,
    })
}

/// The 15 values `schedule_insert` and `schedule_update` bind first (`@P1..@P15`).
fn schedule_values(s: &StoredSchedule) -> Params<'_> {
    params![
        s.name.as_str(),
        s.expression.as_str(),
        s.time_zone.as_str(),
        s.queue.as_str(),
        s.payload.as_str(),
        s.priority,
        s.max_attempts,
        s.misfire.as_str(),
        s.misfire_max,
        s.origin.as_str(),
        s.since,
        s.last_slot,
        s.last_job,
        s.expires_at,
        s.version,
    ]
}

/// The values of `schedule_insert`: [`schedule_values`], then the creation and change times
/// and the kind.
fn schedule_insert_values(s: &StoredSchedule) -> Params<'_> {
    let mut params = schedule_values(s);
    params.push(s.created_at);
    params.push(s.updated_at);
    params.push(s.kind.as_deref());
    params
}

/// The values of `schedule_update`: [`schedule_values`], then the change time, the version
/// the row must still have, and the kind.
fn schedule_update_values(s: &StoredSchedule, version: i64) -> Params<'_> {
    let mut params = schedule_values(s);
    params.push(s.updated_at);
    params.push(version);
    params.push(s.kind.as_deref());
    params
}

/// The values of `queue_set_limit` and `queue_set_key_limit`: the queue and its limit (`int`;
/// NULL: none).
fn set_limit_values(queue: &str, limit: Option<u32>) -> Params<'_> {
    params![queue, limit.map(signed)]
}

/// The values of `queue_set_rate` and `queue_set_key_rate`: the queue, its starts per window
/// (`int`) and the window in microseconds (`bigint`), both NULL to remove the limit.
fn set_rate_values(queue: &str, rate: Option<(u32, i64)>) -> Params<'_> {
    params![queue, rate.map(|(n, _)| signed(n)), rate.map(|(_, us)| us)]
}

/// The values of `queue_rate_record`: the queue, the window (`bigint`) and its count (`int`).
fn rate_record_values(queue: &str, window: i64, count: u32) -> Params<'_> {
    params![queue, window, signed(count)]
}

/// The values of `queue_key_rate_put`: the queue, the key as its UTF-8 bytes (`varbinary`),
/// the window (`bigint`) and its count (`int`).
fn key_rate_put_values<'a>(queue: &'a str, key: &'a str, window: i64, count: u32) -> Params<'a> {
    params![queue, key.as_bytes(), window, signed(count)]
}

/// The values of `queue_key_rate_prune`: the queue, the first window kept (`bigint`) and the
/// most rows (`int`).
fn key_rate_prune_values(queue: &str, before: i64, step: usize) -> Params<'_> {
    params![queue, before, limit(step)]
}

/// The row of `queue_key_rate_get`: the window of a key's count and that count.
fn key_rate(row: &Row) -> Result<(i64, u32), MsSqlError> {
    let window = row
        .try_get::<i64, _>("rate_window")?
        .ok_or_else(|| decode("rate_window is NULL"))?;
    Ok((window, unsigned(row, "rate_count")?))
}

/// The values of `queue_key_cursor`: the queue and the key served last, as its UTF-8 bytes
/// (`varbinary`; NULL: the jobs without a key).
fn key_cursor_values<'a>(queue: &'a str, cursor: Option<&'a str>) -> Params<'a> {
    params![queue, cursor.map(str::as_bytes)]
}

/// The values of `job_key_waiting`: the queue and a key as its UTF-8 bytes.
fn key_values<'a>(queue: &'a str, key: &'a str) -> Params<'a> {
    params![queue, key.as_bytes()]
}

/// The values of `job_key_next`: [`key_values`], then how many keys.
fn key_next_values<'a>(queue: &'a str, after: &'a str, n: usize) -> Params<'a> {
    params![
        queue,
        after.as_bytes(),
        i64::try_from(n).unwrap_or(i64::MAX)
    ]
}

/// The rows of `job_key_leases`: each key with its live leases.
fn key_leases(rows: &[Row]) -> Result<Vec<(String, u64)>, MsSqlError> {
    rows.iter()
        .map(|r| {
            let key = key_column(r, "concurrency_key")?
                .ok_or_else(|| decode("a key with leases is NULL"))?;
            Ok((key, count(r, "running")?))
        })
        .collect()
}

/// The values of `job_claim_key` (`@P1..@P6`: [`claim_values`]'s first five, then the key as
/// its UTF-8 bytes) or, for the jobs without a key, `job_claim_unkeyed` (`@P1..@P5`).
fn claim_key_values<'a>(p: JobClaim<'a>, key: Option<&'a str>) -> Params<'a> {
    let (secs, us) = dateadd_parts(p.lease);
    let mut params = params![
        p.queue,
        limit(p.limit.min(MAX_ROWS_PER_STATEMENT)),
        secs,
        us,
        p.worker,
    ];
    if let Some(key) = key {
        params.push(key.as_bytes());
    }
    params
}

/// A row count as `TOP (@n)` takes it.
fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn signed(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The values of `job_claim`, in its order (`@P1..@P6`).
fn claim_values(p: JobClaim<'_>) -> Params<'_> {
    let (secs, us) = dateadd_parts(p.lease);
    params![
        p.queue,
        limit(p.limit.min(MAX_ROWS_PER_STATEMENT)),
        secs,
        us,
        p.worker,
        p.controls_checked,
    ]
}

/// The values of one INSERT of `jobs` ([`INSERT_VALUES`] per job, in `job_insert`'s order).
fn insert_values<'a>(p: &JobInsert<'a>, start: usize, end: usize) -> Params<'a> {
    let mut v = Params::with_capacity(INSERT_VALUES * (end - start));
    for (job, delay) in p.jobs[start..end].iter().zip(&p.delays[start..end]) {
        let (secs, us) = dateadd_parts(*delay);
        v.push(job.id());
        v.push(job.queue());
        v.push(job.payload_json());
        v.push(job.priority_value());
        v.push(signed(job.max_attempts_value()));
        v.push(secs);
        v.push(us);
        v.push(job.dedup_key_value().map(str::as_bytes));
        v.push(job.kind_value());
        v.push(job.meta_json());
        v.push(job.timeout_value().map(micros));
        v.push(job.concurrency_key_value().map(str::as_bytes));
        v.push(job.initial_state().as_str());
        v.push(job.workflow_id());
    }
    v
}

/// The values of `job_insert_unique` (`@P1..@P14`): the job's first 11, as `job_insert` binds
/// one job, then its unique key and state bits, then its concurrency key.
fn unique_insert_values<'a>(p: &JobInsertUnique<'a>) -> Params<'a> {
    let job = p.job;
    let (secs, us) = dateadd_parts(p.delay);
    params![
        job.id(),
        job.queue(),
        job.payload_json(),
        job.priority_value(),
        signed(job.max_attempts_value()),
        secs,
        us,
        job.dedup_key_value().map(str::as_bytes),
        job.kind_value(),
        job.meta_json(),
        job.timeout_value().map(micros),
        &p.key[..],
        i32::from(p.states),
        job.concurrency_key_value().map(str::as_bytes),
    ]
}

/// What `job_insert_unique` did, from the row it returns: `inserted` 1, or 0 with the holder's
/// id; no row when the key was released before its holder could be read.
fn unique_insert_outcome(rows: &[Row]) -> Result<UniqueInsert, MsSqlError> {
    let Some(row) = rows.first() else {
        return Ok(UniqueInsert::Released);
    };
    if int(row, "inserted")? == 1 {
        Ok(UniqueInsert::Inserted)
    } else {
        Ok(UniqueInsert::Held(JobId(uuid_of(row, "holder")?)))
    }
}

/// The values of `job_unique_replace` (`@P1..@P5`): the pending job's id, then the new payload,
/// priority and delay (whole seconds plus microseconds).
fn unique_replace_values<'a>(p: &JobUniqueReplace<'a>) -> Params<'a> {
    let (secs, us) = dateadd_parts(p.delay);
    params![p.id, p.job.payload_json(), p.job.priority_value(), secs, us]
}

/// The values of `job_list` (`@P1..@P5`): each filter NULL when not set.
fn list_values(req: &ListRequest) -> Params<'_> {
    params![
        req.queue.as_deref(),
        req.state.map(|s| s.as_str()),
        req.before,
        limit(req.limit),
        req.kind.as_deref(),
    ]
}

/// The values of `job_reschedule` (`@P1..@P4`): the id, the delay as seconds and
/// microseconds (NULL: keep the run time), the priority (NULL: keep it).
fn reschedule_values<'a>(p: JobReschedule) -> Params<'a> {
    let parts = p.delay.map(dateadd_parts);
    params![
        p.id,
        parts.map(|(s, _)| s),
        parts.map(|(_, us)| us),
        p.priority
    ]
}

/// The values of one `job_prune` statement of at most `step` rows: the age, the queue (NULL:
/// every queue), the row count, then the states.
fn prune_values<'a>(p: &JobPrune<'a>, step: usize) -> Params<'a> {
    let (secs, us) = dateadd_parts(p.older_than);
    let mut params = params![secs, us, p.queue, limit(step)];
    params.extend(p.states.iter().map(|s| s.as_str()));
    params
}

/// The values of `workflow_prune_lock`: the age as whole seconds plus microseconds, the
/// cursor (before every workflow for the first page: the Unix epoch and the least id), the
/// limit.
fn prune_lock_values<'a>(p: WorkflowPruneLock) -> Params<'a> {
    let (secs, us) = dateadd_parts(p.older_than);
    let (at, id) = p
        .after
        .map_or((DateTime::<Utc>::UNIX_EPOCH, Uuid::nil()), |(at, id)| {
            (at, id.0)
        });
    params![secs, us, at, id, limit(p.limit)]
}

/// The values of `workflow_prune` over `ids`: each state's age as whole seconds plus
/// microseconds (both NULL for a state that is kept), then the ids (`{ids}` from `@P7`).
fn workflow_prune_values<'a>(p: &WorkflowPrune<'_>, ids: &[WorkflowId]) -> Params<'a> {
    let mut params = Params::with_capacity(6 + ids.len());
    for age in [p.completed, p.dead, p.cancelled] {
        let parts = age.map(dateadd_parts);
        params.push(parts.map(|(secs, _)| secs));
        params.push(parts.map(|(_, us)| us));
    }
    params.extend(ids.iter().copied());
    params
}

/// The values `job_ids` and `job_count` bind first (`@P1..@P4`): the queue, the kind, and the
/// age as whole seconds plus microseconds, each NULL when not filtered on.
fn match_values<'a>(m: &JobMatch<'a>) -> Params<'a> {
    let age = m.older_than.map(dateadd_parts);
    params![
        m.queue,
        m.kind,
        age.map(|(secs, _)| secs),
        age.map(|(_, us)| us)
    ]
}

/// The values of `job_ids`: [`match_values`], the cursor (NULL: from the newest), the row
/// count, then the states.
fn ids_values<'a>(m: &JobMatch<'a>) -> Params<'a> {
    let mut params = match_values(m);
    params.push(m.before);
    params.push(limit(m.limit));
    params.extend(m.states.iter().map(|s| s.as_str()));
    params
}

/// The values of `job_count`: [`match_values`], then the states.
fn count_values<'a>(m: &JobMatch<'a>) -> Params<'a> {
    let mut params = match_values(m);
    params.extend(m.states.iter().map(|s| s.as_str()));
    params
}

/// The values of a statement over a list of ids (`{ids}` from `@P1`), then `states`.
fn id_values<'a>(ids: &[JobId], states: &[JobState]) -> Params<'a> {
    let mut params = Params::with_capacity(ids.len() + states.len());
    params.extend(ids.iter().copied());
    params.extend(states.iter().map(|s| s.as_str()));
    params
}

/// The cap of `job_stats` as `TOP (@P2)` takes it: a BIGINT that is never NULL, the largest
/// one for no cap.
fn stats_cap(cap: Option<u64>) -> i64 {
    cap.map_or(i64::MAX, |c| i64::try_from(c).unwrap_or(i64::MAX))
}

/// A row of `job_stats`.
fn stats_from_row(r: &Row) -> Result<QueueStats, MsSqlError> {
    Ok(QueueStats {
        queue: text(r, "queue")?,
        waiting: count(r, "waiting")?,
        available: count(r, "available")?,
        scheduled: count(r, "scheduled")?,
        running: count(r, "running")?,
        oldest_due: opt_time(r, "oldest_due")?,
        completed: count(r, "completed")?,
        dead: count(r, "dead")?,
        cancelled: count(r, "cancelled")?,
        ..QueueStats::default()
    })
}

/// A row of `workflows` (`workflow_lock`, `workflow_get`, `workflow_list`).
fn workflow_from_row(row: &Row) -> Result<StoredWorkflow, MsSqlError> {
    Ok(StoredWorkflow {
        id: WorkflowId(uuid_of(row, "id")?),
        name: opt_text(row, "name")?,
        open: row
            .try_get::<bool, _>("open")?
            .ok_or_else(|| decode("open is NULL"))?,
        callback: opt_uuid(row, "callback")?.map(JobId),
        created_at: time(row, "created_at")?,
    })
}

/// The values of `workflow_insert` (`@P1..@P4`): the id, the name (NULL: none), whether it is
/// an open batch, the callback (NULL: none).
fn workflow_insert_values<'a>(w: &WorkflowInsert<'a>) -> Params<'a> {
    params![w.id, w.name, w.open, w.callback]
}

/// The values of one `workflow_steps_insert`: the workflow, then each job and its step name.
fn steps_values<'a>(workflow: WorkflowId, steps: &[(JobId, &'a str)]) -> Params<'a> {
    let mut params = Params::with_capacity(1 + 2 * steps.len());
    params.push(workflow);
    for (job, step) in steps {
        params.push(*job);
        params.push(*step);
    }
    params
}

/// The values of one `workflow_deps_insert`: per edge, the job depended on, the job that
/// waits, the policy's code (`int`, stored as SMALLINT).
fn edges_values<'a>(edges: &[WorkflowEdge]) -> Params<'a> {
    let mut params = Params::with_capacity(3 * edges.len());
    for e in edges {
        params.push(e.dep);
        params.push(e.job);
        params.push(i32::from(e.policy.code()));
    }
    params
}

/// A stored dependency policy (SMALLINT).
fn policy(row: &Row) -> Result<DepPolicy, MsSqlError> {
    row.try_get::<i16, _>("policy")?
        .map(|code| DepPolicy::from_code(i64::from(code)))
        .ok_or_else(|| decode("policy is NULL"))
}

/// A row of `workflow_edges`.
fn edge_from_row(row: &Row) -> Result<WorkflowEdge, MsSqlError> {
    Ok(WorkflowEdge {
        job: JobId(uuid_of(row, "job_id")?),
        dep: JobId(uuid_of(row, "dep_id")?),
        policy: policy(row)?,
    })
}

/// A row of `job_deps`: the dependency's job, its step, the policy, and what the job is now
/// (no state: deleted).
fn dependency_from_row(row: &Row) -> Result<Dependency, MsSqlError> {
    Ok(Dependency {
        id: JobId(uuid_of(row, "dep_id")?),
        step: text(row, "step")?,
        policy: policy(row)?,
        state: opt_text(row, "state")?
            .as_deref()
            .map(parse_state)
            .transpose()?,
        output: json_column(row, "output")?,
    })
}

/// A row of `workflow_jobs`: the job as `job_list` returns it, with its step name.
fn workflow_job_from_row(row: &Row) -> Result<Job, MsSqlError> {
    let (mut job, _) = job_from_row(row)?;
    job.step = Some(text(row, "step")?);
    Ok(job)
}

/// A workflow as `workflow_list` returns it: its row and how many of its jobs are in each state.
type Listed = (StoredWorkflow, Vec<(JobState, u64)>);

/// The rows of `workflow_list` (one per workflow and state, newest workflow first) as
/// workflows with their counts per state, in lifecycle order; the row of a workflow's deleted
/// jobs (no state, a count of 0) counts nothing.
fn workflow_list_from_rows(rows: &[Row]) -> Result<Vec<Listed>, MsSqlError> {
    let mut out: Vec<Listed> = Vec::new();
    for row in rows {
        let id = WorkflowId(uuid_of(row, "id")?);
        if out.last().map(|(w, _)| w.id) != Some(id) {
            out.push((workflow_from_row(row)?, Vec::new()));
        }
        let n = count(row, "jobs")?;
        if let (Some(state), Some((_, counts))) = (opt_text(row, "state")?, out.last_mut()) {
            if n > 0 {
                counts.push((parse_state(&state)?, n));
            }
        }
    }
    for (_, counts) in &mut out {
        counts.sort_by_key(|(s, _)| JobState::ALL.iter().position(|x| x == s));
    }
    Ok(out)
}

/// The job ids of `rows` (column `col`).
fn job_ids(rows: &[Row], col: &str) -> Result<Vec<JobId>, MsSqlError> {
    rows.iter().map(|r| Ok(JobId(uuid_of(r, col)?))).collect()
}

/// Runs the statement `sql_for(n)` of a list of `n` ids for each chunk of `ids` (at most
/// [`BULK_IDS`]: one parameter each, from `@P1`) on `conn`; the rows of every chunk. No id is
/// no statement (`IN ()` would not parse).
async fn fetch_ids(
    conn: &mut MsSqlConnection,
    ids: &[JobId],
    sql_for: impl Fn(usize) -> String + Send,
) -> Result<Vec<Row>, MsSqlError> {
    let mut rows = Vec::new();
    for chunk in ids.chunks(BULK_IDS) {
        rows.extend(
            conn.fetch(&sql_for(chunk.len()), id_values(chunk, &[]))
                .await?,
        );
    }
    Ok(rows)
}

/// `(start, end)` of each chunk of `n` items, `size` at most.
pub(crate) fn chunks(n: usize, size: usize) -> Vec<(usize, usize)> {
    (0..n)
        .step_by(size.max(1))
        .map(|start| (start, (start + size.max(1)).min(n)))
        .collect()
}

impl MsSqlDriver {
    async fn conn(
        &self,
    ) -> Result<bb8::PooledConnection<'_, crate::pool::ConnectionManager>, MsSqlError> {
        crate::pool::checkout(&self.pool).await
    }

    async fn insert_chunks(
        &self,
        conn: &mut MsSqlConnection,
        p: &JobInsert<'_>,
        parts: &[(usize, usize)],
    ) -> Result<(), MsSqlError> {
        for &(start, end) in parts {
            let sql = self.sql.job_insert_rows(end - start);
            conn.execute(&sql, insert_values(p, start, end)).await?;
        }
        Ok(())
    }

    /// A fenced transition of `lease`: the id and token, then `more`; rows changed.
    async fn fenced(&self, sql: &str, lease: &Lease, more: Params<'_>) -> Result<u64, MsSqlError> {
        let mut params = params![lease.job_id, lease.token];
        params.append(more);
        self.conn().await?.execute(sql, params).await
    }

    async fn fetch(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, MsSqlError> {
        self.conn().await?.fetch(sql, params).await
    }

    /// A write of a queue's controls (an UPDATE, then an INSERT when it changed no row: see
    /// `queue_set_paused.sql`) as one request inside a transaction of the driver's, its verbs
    /// batches of their own (never inside `sp_executesql`, where they would fail with error
    /// 266): the UPDATE's key lock (`UPDLOCK, HOLDLOCK`) lasts until the commit, so two first
    /// writes of one queue never both insert. Committed when the request succeeded, else
    /// rolled back.
    async fn upsert(&self, sql: &str, params: Params<'_>) -> Result<(), MsSqlError> {
        let mut conn = self.conn().await?;
        conn.begin().await?;
        let done = conn.execute(sql, params).await;
        finish(&mut conn, done).await.map(|_| ())
    }
}

/// Ends the driver's own transaction on `conn`: commits after `done` succeeded, else rolls back
/// (a failed rollback leaves the error of the work itself to report).
async fn finish(
    conn: &mut MsSqlConnection,
    done: Result<u64, MsSqlError>,
) -> Result<u64, MsSqlError> {
    match done {
        Ok(total) => {
            conn.commit().await?;
            Ok(total)
        }
        Err(e) => {
            let _ = conn.rollback().await;
            Err(e)
        }
    }
}

#[async_trait]
impl Driver for MsSqlDriver {
    type Conn = MsSqlTransaction;
    type Error = MsSqlError;
    type Candidate = Candidate;
    type Migrator = bb8::PooledConnection<'static, crate::pool::ConnectionManager>;

    fn classify(&self, error: &MsSqlError) -> DriverFault {
        crate::error::classify(error)
    }

    fn migrations(&self) -> &'static [Migration] {
        MIGRATIONS
    }

    async fn migration_lock(&self) -> Result<Self::Migrator, MsSqlError> {
        let mut conn = crate::pool::checkout_owned(&self.pool).await?;
        conn.begin().await?;
        let locked = async {
            let rows = conn
                .fetch(
                    &self.sql.migration_lock,
                    params![lock_name(&self.schema), LOCK_TIMEOUT_MS],
                )
                .await?;
            let result = rows
                .first()
                .map(|r| int(r, "result"))
                .transpose()?
                .ok_or_else(|| decode("sp_getapplock returned no result"))?;
            if result < 0 {
                return Err(MsSqlError::MigrationLock(result));
            }
            conn.batch(&self.sql.migration_table).await
        }
        .await;
        match locked {
            Ok(()) => Ok(conn),
            Err(e) => {
                let _ = conn.rollback().await;
                Err(e)
            }
        }
    }

    async fn migration_applied(&self, m: &mut Self::Migrator) -> Result<Vec<i64>, MsSqlError> {
        let rows = m
            .fetch(&self.sql.migration_applied, Params::default())
            .await?;
        rows.iter()
            .map(|r| {
                r.try_get::<i64, _>("version")?
                    .ok_or_else(|| decode("a migration without a version"))
            })
            .collect()
    }

    async fn migration_apply(
        &self,
        m: &mut Self::Migrator,
        migration: &Migration,
    ) -> Result<(), MsSqlError> {
        // No bound values: one batch, the file's text with nothing spliced in but the validated
        // schema name.
        m.batch(&load(migration.sql, &[("{schema}", &self.schema)]))
            .await?;
        m.execute(
            &self.sql.migration_record,
            params![migration.version, migration.name],
        )
        .await?;
        Ok(())
    }

    async fn migration_unlock(
        &self,
        mut m: Self::Migrator,
        commit: bool,
    ) -> Result<(), MsSqlError> {
        // The application lock belongs to the transaction: ending it releases the lock.
        if commit {
            m.commit().await
        } else {
            m.rollback().await
        }
    }

    async fn now(&self) -> Result<DateTime<Utc>, MsSqlError> {
        let rows = self.fetch(&self.sql.now, Params::default()).await?;
        rows.first()
            .map(|r| time(r, "now"))
            .transpose()?
            .ok_or_else(|| decode("SYSUTCDATETIME() returned no row"))
    }

    async fn job_insert(
        &self,
        target: Target<'_, MsSqlTransaction>,
        p: JobInsert<'_>,
    ) -> Result<(), MsSqlError> {
        let parts = chunks(p.jobs.len(), INSERT_ROWS);
        match target {
            // One statement is atomic by itself: no BEGIN/COMMIT round trips (the engine wraps
            // several in a transaction).
            Target::Pool => {
                let mut conn = self.conn().await?;
                self.insert_chunks(&mut conn, &p, &parts).await
            }
            Target::Tx(tx) => self.insert_chunks(tx.connection(), &p, &parts).await,
        }
    }

    /// One statement per 149 jobs, 14 values each (2,100 parameters at most).
    fn job_insert_statements(&self, p: JobInsert<'_>) -> usize {
        p.jobs.len().div_ceil(INSERT_ROWS)
    }

    /// One request (see `job_insert_unique.sql`): the insert, and after a duplicate the holder
    /// of the key, read with a locking read of the latest committed rows. On the caller's
    /// session when given: a duplicate never dooms its transaction (XACT_ABORT is off, and the
    /// statement's TRY/CATCH takes the error).
    async fn job_insert_unique(
        &self,
        target: Target<'_, MsSqlTransaction>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert, MsSqlError> {
        let params = unique_insert_values(&p);
        let rows = match target {
            Target::Pool => self.fetch(&self.sql.job_insert_unique, params).await?,
            Target::Tx(tx) => {
                tx.connection()
                    .fetch(&self.sql.job_insert_unique, params)
                    .await?
            }
        };
        unique_insert_outcome(&rows)
    }

    async fn job_unique_replace(
        &self,
        target: Target<'_, MsSqlTransaction>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64, MsSqlError> {
        let params = unique_replace_values(&p);
        match target {
            Target::Pool => {
                self.conn()
                    .await?
                    .execute(&self.sql.job_unique_replace, params)
                    .await
            }
            Target::Tx(tx) => {
                tx.connection()
                    .execute(&self.sql.job_unique_replace, params)
                    .await
            }
        }
    }

    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_unique_holder, params![id]).await?;
        rows.first()
            .map(|r| uuid_of(r, "id").map(JobId))
            .transpose()
    }

    async fn job_dedup_live(
        &self,
        target: Target<'_, MsSqlTransaction>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>, MsSqlError> {
        let mut pooled;
        let conn: &mut MsSqlConnection = match target {
            Target::Pool => {
                pooled = self.conn().await?;
                &mut pooled
            }
            Target::Tx(tx) => tx.connection(),
        };
        let mut live = Vec::new();
        for q in queues.chunks(IN_LIST) {
            for k in keys.chunks(IN_LIST) {
                let sql = self.sql.job_dedup_live_for(q.len(), k.len());
                let mut params = Params::with_capacity(q.len() + k.len());
                params.extend(q.iter().copied());
                params.extend(k.iter().map(|s| s.as_bytes()));
                for row in conn.fetch(&sql, params).await? {
                    let key = dedup_key(&row)?.ok_or_else(|| decode("a live key is NULL"))?;
                    live.push((text(&row, "queue")?, key));
                }
            }
        }
        Ok(live)
    }

    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_claim, claim_values(p)).await?;
        leased(&rows)
    }

    /// `job_claim` on the session of the controlled claim's transaction: its U locks on the
    /// claimed rows, like the one on the queue's row, last until that transaction ends.
    async fn job_claim_in(
        &self,
        tx: &mut MsSqlTransaction,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.job_claim, claim_values(p))
            .await?;
        leased(&rows)
    }

    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<Candidate>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.job_candidates, params![p.queue, limit(p.limit)])
            .await?;
        rows.iter()
            .map(|r| {
                let id = bytes(r, "id")?.ok_or_else(|| decode("id is NULL"))?;
                let version = bytes(r, "version")?.ok_or_else(|| decode("version is NULL"))?;
                Ok(Candidate {
                    id: id.to_vec(),
                    version: version.to_vec(),
                })
            })
            .collect()
    }

    /// One statement per chunk of candidates; each is claimed only if its row version is still
    /// the one read, and the rows returned are the ones won.
    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        candidates: Vec<Candidate>,
    ) -> Result<Vec<Leased>, MsSqlError> {
        let mut won = Vec::with_capacity(candidates.len());
        for chunk in candidates.chunks(PAIR_ROWS) {
            let (secs, us) = dateadd_parts(p.lease);
            let mut params = params![secs, us, p.worker, p.queue];
            for c in chunk {
                params.push(c.id.as_slice());
                params.push(c.version.as_slice());
            }
            let sql = self.sql.job_claim_candidates_for(chunk.len());
            won.extend(leased(&self.fetch(&sql, params).await?)?);
        }
        Ok(won)
    }

    async fn job_complete(
        &self,
        target: Target<'_, MsSqlTransaction>,
        p: JobComplete<'_>,
    ) -> Result<u64, MsSqlError> {
        let delete = !p.keep && p.output.is_none();
        match target {
            Target::Pool if !delete => {
                self.fenced(&self.sql.job_complete, p.lease, params![p.output])
                    .await
            }
            Target::Pool => {
                let mut conn = self.conn().await?;
                conn.begin().await?;
                let done = async {
                    let lease = params![p.lease.job_id, p.lease.token];
                    let deleted = conn.execute(&self.sql.job_complete_delete, lease).await?;
                    let update = params![p.lease.job_id, p.lease.token, p.output];
                    Ok(deleted + conn.execute(&self.sql.job_complete, update).await?)
                }
                .await;
                finish(&mut conn, done).await
            }
            Target::Tx(tx) => {
                let conn = tx.connection();
                let mut deleted = 0;
                if delete {
                    let lease = params![p.lease.job_id, p.lease.token];
                    deleted = conn.execute(&self.sql.job_complete_delete, lease).await?;
                }
                let update = params![p.lease.job_id, p.lease.token, p.output];
                Ok(deleted + conn.execute(&self.sql.job_complete, update).await?)
            }
        }
    }

    async fn job_complete_many(&self, leases: &[Lease], keep: bool) -> Result<u64, MsSqlError> {
        let mut conn = self.conn().await?;
        if !keep {
            conn.begin().await?;
        }
        let done = async {
            let mut total = 0;
            for chunk in leases.chunks(PAIR_ROWS) {
                for delete in [true, false] {
                    if delete && keep {
                        continue;
                    }
                    let mut params = Params::with_capacity(2 * chunk.len());
                    for l in chunk {
                        params.push(l.job_id);
                        params.push(l.token);
                    }
                    let sql = self.sql.job_complete_many_for(chunk.len(), delete);
                    total += conn.execute(&sql, params).await?;
                }
            }
            Ok(total)
        }
        .await;
        if keep {
            return done;
        }
        finish(&mut conn, done).await
    }

    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64, MsSqlError> {
        let (secs, us) = dateadd_parts(p.delay);
        self.fenced(
            &self.sql.job_fail_retry,
            p.lease,
            params![secs, us, p.error, signed(p.errors_kept)],
        )
        .await
    }

    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64, MsSqlError> {
        self.fenced(
            &self.sql.job_fail_dead,
            p.lease,
            params![p.error, signed(p.errors_kept)],
        )
        .await
    }

    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64, MsSqlError> {
        let (secs, us) = dateadd_parts(p.delay);
        self.fenced(
            &self.sql.job_snooze,
            p.lease,
            params![secs, us, signed(p.max_snoozes)],
        )
        .await
    }

    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.job_meta_get, params![lease.job_id, lease.token])
            .await?;
        rows.first()
            .map(|r| {
                Ok(StoredMeta {
                    meta: opt_text(r, "meta")?,
                    version: r
                        .try_get::<i64, _>("version")?
                        .ok_or_else(|| decode("version is NULL"))?,
                })
            })
            .transpose()
    }

    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64, MsSqlError> {
        self.fenced(&self.sql.job_meta_set, p.lease, params![p.version, p.meta])
            .await
    }

    async fn job_release(&self, lease: &Lease) -> Result<u64, MsSqlError> {
        self.fenced(&self.sql.job_release, lease, Params::default())
            .await
    }

    async fn job_extend(
        &self,
        lease: &Lease,
        by: Duration,
    ) -> Result<Option<DateTime<Utc>>, MsSqlError> {
        let (secs, us) = dateadd_parts(by);
        let rows = self
            .fetch(
                &self.sql.job_extend,
                params![lease.job_id, lease.token, secs, us],
            )
            .await?;
        rows.first()
            .map(|r| time(r, "lease_expires_at"))
            .transpose()
    }

    async fn job_state(
        &self,
        target: Target<'_, MsSqlTransaction>,
        job: JobId,
    ) -> Result<Option<JobState>, MsSqlError> {
        let params = params![job];
        let rows = match target {
            Target::Pool => self.fetch(&self.sql.job_state, params).await?,
            Target::Tx(tx) => tx.connection().fetch(&self.sql.job_state, params).await?,
        };
        rows.first()
            .map(|r| parse_state(&text(r, "state")?))
            .transpose()
    }

    async fn job_expired(&self, n: usize) -> Result<Vec<Expired>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_expired, params![limit(n)]).await?;
        let mut expired = Vec::with_capacity(rows.len());
        for r in &rows {
            if let Some(token) = r.try_get::<Uuid, _>("lease_token")? {
                expired.push(Expired {
                    id: JobId(uuid_of(r, "id")?),
                    token,
                    queue: text(r, "queue")?,
                    attempts: unsigned(r, "attempts")?,
                    max_attempts: unsigned(r, "max_attempts")?,
                });
            }
        }
        Ok(expired)
    }

    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64, MsSqlError> {
        let mut conn = self.conn().await?;
        let mut total = 0;
        for chunk in p.jobs.chunks(PAIR_ROWS) {
            let mut params = params![p.dead, p.error, signed(p.errors_kept)];
            for (job, token) in chunk {
                params.push(*job);
                params.push(*token);
            }
            let sql = self.sql.job_rescue_for(chunk.len());
            total += conn.execute(&sql, params).await?;
        }
        Ok(total)
    }

    async fn job_cancel(&self, job: JobId) -> Result<u64, MsSqlError> {
        self.conn()
            .await?
            .execute(&self.sql.job_cancel, params![job])
            .await
    }

    async fn job_retry(
        &self,
        tx: &mut MsSqlTransaction,
        job: JobId,
    ) -> Result<Option<String>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.job_retry, params![job])
            .await?;
        rows.first().map(|r| text(r, "queue")).transpose()
    }

    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.job_reschedule, reschedule_values(p))
            .await?;
        rows.first().map(|r| text(r, "queue")).transpose()
    }

    async fn job_get(&self, job: JobId) -> Result<Option<Job>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_get, params![job]).await?;
        rows.first().map(job_detail_from_row).transpose()
    }

    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_list, list_values(req)).await?;
        rows.iter()
            .map(|r| job_from_row(r).map(|(job, _)| job))
            .collect()
    }

    /// One request (see `job_stats.sql`): the queues are found and counted inside it.
    async fn job_stats(
        &self,
        queue: Option<&str>,
        cap: Option<u64>,
    ) -> Result<Vec<QueueStats>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.job_stats, params![queue, stats_cap(cap)])
            .await?;
        rows.iter().map(stats_from_row).collect()
    }

    /// Deletes in statements of at most 1,000 rows (`MAX_ROWS_PER_STATEMENT`, below lock
    /// escalation) until `p.limit` rows are gone or a statement finds fewer.
    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64, MsSqlError> {
        let mut conn = self.conn().await?;
        let sql = self.sql.job_prune_for(p.states.len());
        let mut total = 0u64;
        let want = u64::try_from(p.limit).unwrap_or(u64::MAX);
        while total < want {
            let step = usize::try_from(want - total)
                .unwrap_or(usize::MAX)
                .min(MAX_ROWS_PER_STATEMENT);
            let n = conn.execute(&sql, prune_values(&p, step)).await?;
            total += n;
            if n < step as u64 {
                break;
            }
        }
        Ok(total)
    }

    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>, MsSqlError> {
        // No state matches nothing (and `IN ()` would not parse); neither do zero rows.
        if m.states.is_empty() || m.limit == 0 {
            return Ok(Vec::new());
        }
        let sql = self.sql.job_ids_for(m.states.len());
        let rows = self.fetch(&sql, ids_values(&m)).await?;
        rows.iter()
            .map(|r| Ok((JobId(uuid_of(r, "id")?), text(r, "queue")?)))
            .collect()
    }

    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64, MsSqlError> {
        // No state matches nothing (and `IN ()` would not parse).
        if m.states.is_empty() {
            return Ok(0);
        }
        let sql = self.sql.job_count_for(m.states.len());
        let rows = self.fetch(&sql, count_values(&m)).await?;
        rows.first()
            .map(|r| count(r, "n"))
            .transpose()?
            .ok_or_else(|| decode("COUNT_BIG(*) returned no row"))
    }

    /// One statement per 1,000 ids (`BULK_IDS`; the engine's batch is one).
    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64, MsSqlError> {
        let mut conn = self.conn().await?;
        let mut total = 0;
        for chunk in ids.chunks(BULK_IDS) {
            let sql = self.sql.job_cancel_many_for(chunk.len());
            total += conn.execute(&sql, id_values(chunk, &[])).await?;
        }
        Ok(total)
    }

    /// In the engine's transaction: one statement per 1,000 ids (`BULK_IDS`; the engine's
    /// batch is one), all of them failing together with it.
    async fn job_retry_many(
        &self,
        tx: &mut MsSqlTransaction,
        ids: &[JobId],
    ) -> Result<u64, MsSqlError> {
        let conn = tx.connection();
        let mut total = 0;
        for chunk in ids.chunks(BULK_IDS) {
            let sql = self.sql.job_retry_many_for(chunk.len());
            total += conn.execute(&sql, id_values(chunk, &[])).await?;
        }
        Ok(total)
    }

    /// One statement per 1,000 jobs (`BULK_IDS`).
    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>, MsSqlError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
        let rows = fetch_ids(&mut conn, ids, |n| self.sql.job_workflows_for(n)).await?;
        let mut out = rows
            .iter()
            .map(|r| Ok(WorkflowId(uuid_of(r, "workflow_id")?)))
            .collect::<Result<Vec<_>, MsSqlError>>()?;
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64, MsSqlError> {
        if m.states.is_empty() {
            return Ok(0);
        }
        let sql = self.sql.job_dependents_count_for(m.states.len());
        let rows = self.fetch(&sql, count_values(&m)).await?;
        rows.first()
            .map(|r| count(r, "n"))
            .transpose()?
            .ok_or_else(|| decode("COUNT_BIG(*) returned no row"))
    }

    /// One statement per 1,000 ids (`BULK_IDS`; the engine's batch is one).
    async fn job_delete_many(&self, ids: &[JobId], states: &[JobState]) -> Result<u64, MsSqlError> {
        // No state matches nothing (and `IN ()` would not parse); no id is no statement.
        if states.is_empty() {
            return Ok(0);
        }
        let mut conn = self.conn().await?;
        let mut total = 0;
        for chunk in ids.chunks(BULK_IDS) {
            let sql = self.sql.job_delete_many_for(chunk.len(), states.len());
            total += conn.execute(&sql, id_values(chunk, states)).await?;
        }
        Ok(total)
    }

    async fn maintenance_claim(
        &self,
        task: &str,
        token: Uuid,
        lease: Duration,
    ) -> Result<bool, MsSqlError> {
        let (secs, us) = dateadd_parts(lease);
        let changed = self
            .conn()
            .await?
            .execute(&self.sql.maintenance_claim, params![task, token, secs, us])
            .await?;
        Ok(changed == 1)
    }

    async fn maintenance_release(
        &self,
        task: &str,
        token: Uuid,
        next_in: Duration,
    ) -> Result<(), MsSqlError> {
        let (secs, us) = dateadd_parts(next_in);
        self.conn()
            .await?
            .execute(
                &self.sql.maintenance_release,
                params![task, token, secs, us],
            )
            .await?;
        Ok(())
    }

    // Queue controls.

    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.queue_control_get, params![queue])
            .await?;
        rows.first().map(control).transpose()
    }

    async fn queue_control_lock(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
    ) -> Result<Option<QueueControl>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.queue_control_lock, params![queue])
            .await?;
        rows.first().map(control).transpose()
    }

    async fn queue_control_list(&self) -> Result<Vec<QueueControl>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.queue_control_list, Params::default())
            .await?;
        rows.iter().map(control).collect()
    }

    /// An UPDATE, then an INSERT when it changed no row, in one request inside a transaction
    /// of the driver's, as every write of a queue's controls (see `queue_set_paused.sql`).
    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<(), MsSqlError> {
        self.upsert(&self.sql.queue_set_paused, params![queue, paused])
            .await
    }

    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), MsSqlError> {
        self.upsert(&self.sql.queue_set_limit, set_limit_values(queue, limit))
            .await
    }

    async fn queue_set_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), MsSqlError> {
        self.upsert(&self.sql.queue_set_rate, set_rate_values(queue, rate))
            .await
    }

    async fn queue_rate_state(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
    ) -> Result<RateState, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.queue_rate_state, params![queue])
            .await?;
        rows.first()
            .map(rate_state)
            .transpose()?
            .ok_or_else(|| decode(format!("queue {queue} has no row to count its rate in")))
    }

    async fn queue_rate_record(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
        window: i64,
        count: u32,
    ) -> Result<(), MsSqlError> {
        tx.connection()
            .execute(
                &self.sql.queue_rate_record,
                rate_record_values(queue, window, count),
            )
            .await?;
        Ok(())
    }

    async fn queue_set_key_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), MsSqlError> {
        self.upsert(
            &self.sql.queue_set_key_limit,
            set_limit_values(queue, limit),
        )
        .await
    }

    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<(), MsSqlError> {
        self.upsert(&self.sql.queue_set_fair, params![queue, on])
            .await
    }

    /// One request (the queue's row, then its keys' counts) in a transaction of the driver's:
    /// the row's exclusive lock keeps keyed claims out until all is done, and a failure of any
    /// statement (which does not stop the request: XACT_ABORT is off) undoes them all.
    async fn queue_set_key_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), MsSqlError> {
        self.upsert(&self.sql.queue_set_key_rate, set_rate_values(queue, rate))
            .await
    }

    async fn queue_key_rate_get(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.queue_key_rate_get, key_values(queue, key))
            .await?;
        rows.first().map(key_rate).transpose()
    }

    async fn queue_key_rate_put(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
        key: &str,
        window: i64,
        count: u32,
    ) -> Result<(), MsSqlError> {
        tx.connection()
            .execute(
                &self.sql.queue_key_rate_put,
                key_rate_put_values(queue, key, window, count),
            )
            .await?;
        Ok(())
    }

    async fn queue_key_cursor(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<(), MsSqlError> {
        tx.connection()
            .execute(&self.sql.queue_key_cursor, key_cursor_values(queue, cursor))
            .await?;
        Ok(())
    }

    async fn job_key_leases(
        &self,
        target: Target<'_, MsSqlTransaction>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>, MsSqlError> {
        let rows = match target {
            Target::Pool => self.fetch(&self.sql.job_key_leases, params![queue]).await?,
            Target::Tx(tx) => {
                tx.connection()
                    .fetch(&self.sql.job_key_leases, params![queue])
                    .await?
            }
        };
        key_leases(&rows)
    }

    async fn job_key_next(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
        after: &str,
        n: usize,
    ) -> Result<Vec<String>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.job_key_next, key_next_values(queue, after, n))
            .await?;
        rows.iter()
            .map(|r| key_column(r, "next_key")?.ok_or_else(|| decode("a next key is NULL")))
            .collect()
    }

    /// `job_claim_key` (or `job_claim_unkeyed`) on the session of the keyed claim's
    /// transaction: its locks on the claimed rows, like the one on the queue's row, last until
    /// that transaction ends.
    async fn job_claim_key(
        &self,
        tx: &mut MsSqlTransaction,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>, MsSqlError> {
        let sql = match key {
            Some(_) => &self.sql.job_claim_key,
            None => &self.sql.job_claim_unkeyed,
        };
        let rows = tx.connection().fetch(sql, claim_key_values(p, key)).await?;
        leased(&rows)
    }

    /// In statements of at most 1,000 rows (`MAX_ROWS_PER_STATEMENT`), as `job_prune`.
    async fn queue_key_rate_prune(
        &self,
        queue: &str,
        before: i64,
        n: usize,
    ) -> Result<u64, MsSqlError> {
        let mut conn = self.conn().await?;
        let mut total = 0u64;
        let want = u64::try_from(n).unwrap_or(u64::MAX);
        while total < want {
            let step = usize::try_from(want - total)
                .unwrap_or(usize::MAX)
                .min(MAX_ROWS_PER_STATEMENT);
            let done = conn
                .execute(
                    &self.sql.queue_key_rate_prune,
                    key_rate_prune_values(queue, before, step),
                )
                .await?;
            total += done;
            if done < step as u64 {
                break;
            }
        }
        Ok(total)
    }

    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64, MsSqlError> {
        let rows = self
            .fetch(&self.sql.job_key_waiting, key_values(queue, key))
            .await?;
        rows.first()
            .map(|r| count(r, "waiting"))
            .transpose()?
            .ok_or_else(|| decode("COUNT_BIG(*) returned no row"))
    }

    async fn job_live_leases(
        &self,
        tx: &mut MsSqlTransaction,
        queue: &str,
    ) -> Result<u64, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.job_live_leases, params![queue])
            .await?;
        rows.first()
            .map(|r| count(r, "live"))
            .transpose()?
            .ok_or_else(|| decode("COUNT_BIG(*) returned no row"))
    }

    // Periodic jobs (schedules).

    type Tx = MsSqlTransaction;

    /// A transaction on a pooled session at READ COMMITTED (what the pool resets sessions to).
    async fn tx_begin(&self) -> Result<Self::Tx, MsSqlError> {
        MsSqlTransaction::begin(&self.pool).await
    }

    fn tx_conn(tx: &mut Self::Tx) -> &mut MsSqlTransaction {
        tx
    }

    async fn tx_commit(&self, tx: Self::Tx) -> Result<(), MsSqlError> {
        tx.commit().await
    }

    async fn tx_rollback(&self, tx: Self::Tx) -> Result<(), MsSqlError> {
        tx.rollback().await
    }

    type Savepoint<'c> = &'c mut MsSqlTransaction;

    async fn savepoint<'c>(
        &self,
        tx: &'c mut MsSqlTransaction,
    ) -> Result<&'c mut MsSqlTransaction, MsSqlError> {
        tx.connection().savepoint(SAVEPOINT).await?;
        Ok(tx)
    }

    /// Nothing to send: T-SQL has no release, and a savepoint left in the transaction ends
    /// with it.
    async fn savepoint_release(&self, _savepoint: &mut MsSqlTransaction) -> Result<(), MsSqlError> {
        Ok(())
    }

    async fn savepoint_rollback(&self, savepoint: &mut MsSqlTransaction) -> Result<(), MsSqlError> {
        savepoint.connection().rollback_to(SAVEPOINT).await
    }

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

    // Workflows.

    /// A duplicate id fails on the workflows table's primary key, its only unique index: it is
    /// reported as [`UniqueIndex::WorkflowId`]. XACT_ABORT is off, so the error leaves the
    /// transaction open for the engine to roll back.
    async fn workflow_insert(
        &self,
        tx: &mut MsSqlTransaction,
        w: WorkflowInsert<'_>,
    ) -> Result<(), MsSqlError> {
        tx.connection()
            .execute(&self.sql.workflow_insert, workflow_insert_values(&w))
            .await
            .map_err(|e| e.in_unique_index(UniqueIndex::WorkflowId))?;
        Ok(())
    }

    /// One INSERT per 500 jobs (`WORKFLOW_ROWS`), in the caller's transaction.
    async fn workflow_steps_insert(
        &self,
        tx: &mut MsSqlTransaction,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<(), MsSqlError> {
        let conn = tx.connection();
        for chunk in steps.chunks(WORKFLOW_ROWS) {
            let sql = self.sql.workflow_steps_insert_for(chunk.len());
            conn.execute(&sql, steps_values(workflow, chunk)).await?;
        }
        Ok(())
    }

    /// One INSERT per 500 dependencies (`WORKFLOW_ROWS`), in the caller's transaction.
    async fn workflow_deps_insert(
        &self,
        tx: &mut MsSqlTransaction,
        edges: &[WorkflowEdge],
    ) -> Result<(), MsSqlError> {
        let conn = tx.connection();
        for chunk in edges.chunks(WORKFLOW_ROWS) {
            let sql = self.sql.workflow_deps_insert_for(chunk.len());
            conn.execute(&sql, edges_values(chunk)).await?;
        }
        Ok(())
    }

    async fn workflow_lock(
        &self,
        tx: &mut MsSqlTransaction,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.workflow_lock, params![id])
            .await?;
        rows.first().map(workflow_from_row).transpose()
    }

    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64, MsSqlError> {
        self.conn()
            .await?
            .execute(&self.sql.workflow_seal, params![id])
            .await
    }

    /// One statement per 1,000 finished jobs (`BULK_IDS`); a job waiting for several of them
    /// is listed once.
    async fn workflow_dependents(
        &self,
        target: Target<'_, MsSqlTransaction>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>, MsSqlError> {
        if finished.is_empty() {
            return Ok(Vec::new());
        }
        let mut pooled;
        let conn: &mut MsSqlConnection = match target {
            Target::Pool => {
                pooled = self.conn().await?;
                &mut pooled
            }
            Target::Tx(tx) => tx.connection(),
        };
        let rows = fetch_ids(conn, finished, |n| self.sql.workflow_dependents_for(n)).await?;
        let mut ids = job_ids(&rows, "job_id")?;
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// One statement per 1,000 jobs (`BULK_IDS`), each atomic by itself (on the pool, a job
    /// is cancelled or not whatever becomes of the others).
    async fn workflow_block(
        &self,
        target: Target<'_, MsSqlTransaction>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>, MsSqlError> {
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        let mut pooled;
        let conn: &mut MsSqlConnection = match target {
            Target::Pool => {
                pooled = self.conn().await?;
                &mut pooled
            }
            Target::Tx(tx) => tx.connection(),
        };
        let rows = fetch_ids(conn, waiting, |n| self.sql.workflow_block_for(n)).await?;
        job_ids(&rows, "id")
    }

    /// One statement per 1,000 jobs (`BULK_IDS`), as `workflow_block`.
    async fn workflow_promote(
        &self,
        target: Target<'_, MsSqlTransaction>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>, MsSqlError> {
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        let mut pooled;
        let conn: &mut MsSqlConnection = match target {
            Target::Pool => {
                pooled = self.conn().await?;
                &mut pooled
            }
            Target::Tx(tx) => tx.connection(),
        };
        let rows = fetch_ids(conn, waiting, |n| self.sql.workflow_promote_for(n)).await?;
        rows.iter()
            .map(|r| Ok((JobId(uuid_of(r, "id")?), text(r, "queue")?)))
            .collect()
    }

    /// In the retry's transaction: one statement per 1,000 retried jobs (`BULK_IDS`).
    async fn workflow_reopen(
        &self,
        tx: &mut MsSqlTransaction,
        retried: &[JobId],
    ) -> Result<Vec<JobId>, MsSqlError> {
        if retried.is_empty() {
            return Ok(Vec::new());
        }
        let rows = fetch_ids(tx.connection(), retried, |n| {
            self.sql.workflow_reopen_for(n)
        })
        .await?;
        job_ids(&rows, "id")
    }

    /// In the retry's transaction: one statement per 1,000 jobs (`BULK_IDS`).
    async fn workflow_blocked(
        &self,
        tx: &mut MsSqlTransaction,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>, MsSqlError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = fetch_ids(tx.connection(), ids, |n| self.sql.workflow_blocked_for(n)).await?;
        rows.iter()
            .map(|r| Ok((JobId(uuid_of(r, "id")?), JobId(uuid_of(r, "blocked_by")?))))
            .collect()
    }

    async fn workflow_waiting(
        &self,
        after: Option<JobId>,
        n: usize,
    ) -> Result<Vec<JobId>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.workflow_waiting, params![after, limit(n)])
            .await?;
        job_ids(&rows, "id")
    }

    async fn workflow_prune_lock(
        &self,
        tx: &mut MsSqlTransaction,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>, MsSqlError> {
        let rows = tx
            .connection()
            .fetch(&self.sql.workflow_prune_lock, prune_lock_values(p))
            .await?;
        rows.iter()
            .map(|r| Ok((WorkflowId(uuid_of(r, "id")?), time(r, "created_at")?)))
            .collect()
    }

    /// One request per 1,000 workflows (`MAX_ROWS_PER_STATEMENT`; retention locks 500 at a
    /// time), in the caller's transaction (see `workflow_prune.sql`).
    async fn workflow_prune(
        &self,
        tx: &mut MsSqlTransaction,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned, MsSqlError> {
        let conn = tx.connection();
        let mut done = WorkflowPruned::default();
        for chunk in p.ids.chunks(MAX_ROWS_PER_STATEMENT) {
            let sql = self.sql.workflow_prune_for(chunk.len());
            let rows = conn.fetch(&sql, workflow_prune_values(&p, chunk)).await?;
            let row = rows
                .first()
                .ok_or_else(|| decode("workflow_prune returned no row"))?;
            done.workflows += count(row, "workflows")?;
            done.jobs += count(row, "jobs")?;
        }
        Ok(done)
    }

    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>, MsSqlError> {
        let rows = self.fetch(&self.sql.workflow_get, params![id]).await?;
        rows.first().map(workflow_from_row).transpose()
    }

    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>, MsSqlError> {
        let rows = self.fetch(&self.sql.workflow_jobs, params![id]).await?;
        rows.iter().map(workflow_job_from_row).collect()
    }

    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>, MsSqlError> {
        let rows = self.fetch(&self.sql.workflow_edges, params![id]).await?;
        rows.iter().map(edge_from_row).collect()
    }

    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        n: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>, MsSqlError> {
        let rows = self
            .fetch(&self.sql.workflow_list, params![before, limit(n)])
            .await?;
        workflow_list_from_rows(&rows)
    }

    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>, MsSqlError> {
        let rows = self.fetch(&self.sql.job_deps, params![id]).await?;
        rows.iter().map(dependency_from_row).collect()
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use tiberius::{ColumnData, ColumnType, IntoSql};

    use super::*;
    use crate::bind::Bind;

    fn at(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + s, 123_456_000).unwrap()
    }

    /// A row as `OUTPUT inserted.*` of a claim returns it.
    fn claimed_row(token: Option<Uuid>, dedup: Option<&str>, workflow: Option<Uuid>) -> Row {
        let id = Uuid::now_v7();
        Row::builder()
            .column(
                "id",
                ColumnType::BigBinary,
                id.as_bytes().to_vec().into_sql(),
            )
            .column("queue", ColumnType::NVarchar, "emails".into_sql())
            .column(
                "payload",
                ColumnType::NVarchar,
                r#"{"to":"ḱ","n":[1,2]}"#.into_sql(),
            )
            .column("priority", ColumnType::Int4, (-7i32).into_sql())
            .column("state", ColumnType::NVarchar, "running".into_sql())
            .column("attempts", ColumnType::Int4, 2i32.into_sql())
            .column("max_attempts", ColumnType::Int4, 5i32.into_sql())
            .column("run_at", ColumnType::Datetime2, at(0).into_sql())
            .column("lease_token", ColumnType::Guid, token.into_sql())
            .column(
                "lease_expires_at",
                ColumnType::Datetime2,
                Some(at(30)).into_sql(),
            )
            .column("worker", ColumnType::NVarchar, "w-1".into_sql())
            .column("last_error", ColumnType::NVarchar, None::<&str>.into_sql())
            .column(
                "dedup_key",
                ColumnType::BigVarBin,
                dedup.map(|k| k.as_bytes().to_vec()).into_sql(),
            )
            .column("created_at", ColumnType::Datetime2, at(-5).into_sql())
            .column("updated_at", ColumnType::Datetime2, at(1).into_sql())
            .column(
                "finished_at",
                ColumnType::Datetime2,
                None::<DateTime<Utc>>.into_sql(),
            )
            .column("kind", ColumnType::NVarchar, "send_email".into_sql())
            .column("meta", ColumnType::NVarchar, r#"{"step":2}"#.into_sql())
            .column(
                "timeout_us",
                ColumnType::Int8,
                Some(1_500_000i64).into_sql(),
            )
            // A row from before the column existed: NULL counts as no snooze.
            .column("snoozes", ColumnType::Int4, None::<i32>.into_sql())
            .column(
                "workflow_id",
                ColumnType::BigBinary,
                workflow.map(|w| w.as_bytes().to_vec()).into_sql(),
            )
            .column(
                "blocked_by",
                ColumnType::BigBinary,
                None::<Vec<u8>>.into_sql(),
            )
            .build()
    }

    #[test]
    fn job_rows_decode_their_history_and_output() {
        let (workflow, blocker) = (Uuid::now_v7(), Uuid::now_v7());
        let row = Row::builder()
            .column("id", ColumnType::BigBinary, Uuid::now_v7().as_bytes().to_vec().into_sql())
            .column("queue", ColumnType::NVarchar, "q".into_sql())
            .column("payload", ColumnType::NVarchar, "1".into_sql())
            .column("priority", ColumnType::Int4, 0i32.into_sql())
            .column("state", ColumnType::NVarchar, "dead".into_sql())
            .column("attempts", ColumnType::Int4, 2i32.into_sql())
            .column("max_attempts", ColumnType::Int4, 2i32.into_sql())
            .column("run_at", ColumnType::Datetime2, at(0).into_sql())
            .column("lease_token", ColumnType::Guid, None::<Uuid>.into_sql())
            .column("lease_expires_at", ColumnType::Datetime2, None::<DateTime<Utc>>.into_sql())
            .column("worker", ColumnType::NVarchar, "w".into_sql())
            .column("last_error", ColumnType::NVarchar, "b\"c".into_sql())
            .column("dedup_key", ColumnType::BigVarBin, None::<Vec<u8>>.into_sql())
            .column("created_at", ColumnType::Datetime2, at(0).into_sql())
            .column("updated_at", ColumnType::Datetime2, at(0).into_sql())
            .column("finished_at", ColumnType::Datetime2, Some(at(1)).into_sql())
            .column("kind", ColumnType::NVarchar, None::<&str>.into_sql())
            .column("meta", ColumnType::NVarchar, None::<&str>.into_sql())
            .column("timeout_us", ColumnType::Int8, None::<i64>.into_sql())
            .column("snoozes", ColumnType::Int4, 3i32.into_sql())
            // As the statements write it: FOR JSON PATH entries, style 126 times with a `Z`.
            .column(
                "errors",
                ColumnType::NVarchar,
                r#"[{"attempt":1,"at":"2026-11-25T10:00:00.1234567Z","error":"a","worker":null},{"attempt":2,"at":"2026-11-25T10:00:01.0000000Z","error":"b\"c","worker":"w"}]"#
                    .into_sql(),
            )
            .column("output", ColumnType::NVarchar, None::<&str>.into_sql())
            .column("workflow_id", ColumnType::BigBinary, Some(workflow.as_bytes().to_vec()).into_sql())
            .column("blocked_by", ColumnType::BigBinary, Some(blocker.as_bytes().to_vec()).into_sql())
            .column("step", ColumnType::NVarchar, "resize ✂".into_sql())
            .build();
        let job = job_detail_from_row(&row).unwrap();
        // A step of a workflow, cancelled because the job it needed died.
        assert_eq!(job.workflow, Some(WorkflowId(workflow)));
        assert_eq!(job.blocked_by, Some(JobId(blocker)));
        assert_eq!(job.step.as_deref(), Some("resize ✂"));
        assert_eq!(job.snoozes, 3);
        assert_eq!(job.errors.len(), 2);
        assert_eq!(job.errors[0].worker, None);
        assert_eq!(job.errors[1].error, "b\"c");
        assert_eq!(job.errors[1].worker.as_deref(), Some("w"));
        assert!(job.errors[0].at < job.errors[1].at);
        assert!(job.output.is_none() && job.kind.is_none() && job.meta.is_none());
    }

    #[test]
    fn claimed_rows_decode_into_leases() {
        let token = Uuid::new_v4();
        let workflow = Uuid::now_v7();
        let rows = [claimed_row(Some(token), Some("k "), Some(workflow))];
        let leased = leased(&rows).unwrap();
        let l = &leased[0];
        assert_eq!(l.job.queue, "emails");
        assert_eq!(l.job.payload.get(), r#"{"to":"ḱ","n":[1,2]}"#);
        assert_eq!(l.job.priority, -7);
        assert_eq!(l.job.state, JobState::Running);
        assert_eq!((l.job.attempts, l.job.max_attempts), (2, 5));
        assert_eq!(l.job.run_at, at(0));
        assert_eq!(l.job.worker.as_deref(), Some("w-1"));
        assert_eq!(l.job.last_error, None);
        assert_eq!(
            l.job.dedup_key.as_deref(),
            Some("k "),
            "trailing space kept"
        );
        assert_eq!(l.job.finished_at, None);
        assert_eq!(l.job.kind.as_deref(), Some("send_email"));
        assert_eq!(
            l.job.meta.as_deref().map(RawValue::get),
            Some(r#"{"step":2}"#)
        );
        assert_eq!(l.job.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(l.job.snoozes, 0);
        assert!(l.job.errors.is_empty() && l.job.output.is_none());
        assert_eq!(l.lease.token, token);
        assert_eq!(l.lease.expires_at, at(30));
        assert_eq!(l.lease.attempt, 2);
        assert_eq!(l.lease.job_id, l.job.id);
        // A step of a workflow: the lease knows it (its end lets the steps after it go on).
        assert_eq!(l.job.workflow, Some(WorkflowId(workflow)));
        assert_eq!(l.lease.workflow, Some(WorkflowId(workflow)));
        assert_eq!((l.job.blocked_by, l.job.step.as_deref()), (None, None));
        assert!(l.job.depends_on.is_empty());
    }

    #[test]
    fn a_claimed_row_without_a_token_is_refused() {
        let err = leased(&[claimed_row(None, None, None)]).unwrap_err();
        assert!(err.to_string().contains("no lease token"), "{err}");
    }

    #[test]
    fn malformed_rows_are_decode_errors() {
        let short_id = Row::builder()
            .column("id", ColumnType::BigBinary, vec![1u8, 2, 3].into_sql())
            .build();
        let err = uuid_of(&short_id, "id").unwrap_err();
        assert!(err.to_string().contains("3 bytes"), "{err}");
        let bad_state = Row::builder()
            .column("state", ColumnType::NVarchar, "zombie".into_sql())
            .build();
        assert!(parse_state(&text(&bad_state, "state").unwrap()).is_err());
        let bad_key = Row::builder()
            .column(
                "dedup_key",
                ColumnType::BigVarBin,
                vec![0xffu8, 0xfe].into_sql(),
            )
            .build();
        assert!(dedup_key(&bad_key).is_err());
        let null = Row::builder()
            .column("queue", ColumnType::NVarchar, None::<&str>.into_sql())
            .build();
        assert!(text(&null, "queue")
            .unwrap_err()
            .to_string()
            .contains("NULL"));
    }

    #[test]
    fn ids_bind_as_big_endian_bytes() {
        // BINARY(16) compares bytes in order, which is the order of UUID v7 ids.
        let a = JobId(Uuid::now_v7());
        std::thread::sleep(Duration::from_millis(2));
        let b = JobId(Uuid::now_v7());
        let (ColumnData::Binary(Some(x)), ColumnData::Binary(Some(y))) = (a.bind(), b.bind())
        else {
            panic!("ids bind as binary");
        };
        assert_eq!(x.len(), 16);
        assert!(x < y && a < b);
    }

    #[test]
    fn control_rows_decode() {
        let full = |paused: bool,
                    limit: Option<i32>,
                    rate: Option<i32>,
                    period: Option<i64>,
                    keys: (Option<i32>, bool, Option<&[u8]>),
                    key_rate: (Option<i32>, Option<i64>)| {
            let (key_limit, fair, cursor) = keys;
            let (key_rate_limit, key_rate_period) = key_rate;
            Row::builder()
                .column("name", ColumnType::NVarchar, "emails".into_sql())
                .column("paused", ColumnType::Bit, paused.into_sql())
                .column("concurrency_limit", ColumnType::Int4, limit.into_sql())
                .column("rate_limit", ColumnType::Int4, rate.into_sql())
                .column("rate_period_us", ColumnType::Int8, period.into_sql())
                .column("key_limit", ColumnType::Int4, key_limit.into_sql())
                .column("fair_shares", ColumnType::Bit, fair.into_sql())
                .column(
                    "key_cursor",
                    ColumnType::BigVarBin,
                    cursor.map(<[u8]>::to_vec).into_sql(),
                )
                .column(
                    "key_rate_limit",
                    ColumnType::Int4,
                    key_rate_limit.into_sql(),
                )
                .column(
                    "key_rate_period_us",
                    ColumnType::Int8,
                    key_rate_period.into_sql(),
                )
                .build()
        };
        let rated = |paused: bool, limit: Option<i32>, rate: Option<i32>, period: Option<i64>| {
            full(
                paused,
                limit,
                rate,
                period,
                (None, false, None),
                (None, None),
            )
        };
        let keyed = |keys: (Option<i32>, bool, Option<&[u8]>)| {
            full(false, None, None, None, keys, (None, None))
        };
        let key_rated = |rate: Option<i32>, period: Option<i64>| {
            full(false, None, None, None, (None, false, None), (rate, period))
        };
        let row = |paused: bool, limit: Option<i32>| rated(paused, limit, None, None);
        let c = control(&row(true, None)).unwrap();
        assert_eq!(
            c,
            QueueControl {
                queue: "emails".into(),
                paused: true,
                concurrency_limit: None,
                rate_limit: None,
                key_limit: None,
                fair_shares: false,
                key_cursor: None,
                key_rate_limit: None,
            }
        );
        let c = control(&row(false, Some(3))).unwrap();
        assert!(!c.paused && c.concurrency_limit == Some(3) && c.restricts());
        assert!(!control(&row(false, None)).unwrap().restricts());
        // A rate limit alone restricts the queue: its claims take the controlled path.
        let c = control(&rated(false, None, Some(10), Some(1_500_000))).unwrap();
        assert_eq!(
            c.rate_limit,
            Some(queue_core::RateLimit {
                limit: 10,
                period: Duration::from_millis(1_500),
            })
        );
        assert!(c.restricts() && c.concurrency_limit.is_none());
        // Half a limit is none.
        for (rate, period) in [(Some(10), None), (None, Some(1_000_000))] {
            let c = control(&rated(false, None, rate, period)).unwrap();
            assert_eq!(c.rate_limit, None);
            assert!(!c.restricts());
        }
        // A key limit alone, or fair shares alone, makes the queue keyed (and controlled);
        // the cursor is the key's UTF-8 bytes, exactly (case and trailing spaces kept).
        let cursor = "Acmé ".as_bytes();
        let c = control(&keyed((Some(2), false, Some(cursor)))).unwrap();
        assert_eq!(
            (c.key_limit, c.fair_shares, c.key_cursor.as_deref()),
            (Some(2), false, Some("Acmé "))
        );
        assert!(c.keyed() && c.restricts());
        let c = control(&keyed((None, true, None))).unwrap();
        assert_eq!(
            (c.key_limit, c.fair_shares, c.key_cursor.as_deref()),
            (None, true, None)
        );
        assert!(c.keyed() && c.restricts());
        // A limit the column's check forbids is none, never a wrapped number.
        let c = control(&keyed((Some(-1), false, None))).unwrap();
        assert_eq!(c.key_limit, None);
        assert!(!c.keyed());
        // A cursor that is not UTF-8 is a decoding error, never a guessed key.
        let bad = keyed((None, true, Some(&[0xff, 0x41])));
        assert!(control(&bad).is_err());
        // A key rate limit alone makes the queue keyed (and controlled), from its own two
        // columns, never the queue's rate limit.
        let c = control(&key_rated(Some(5), Some(60_000_000))).unwrap();
        assert_eq!(
            c.key_rate_limit,
            Some(queue_core::RateLimit {
                limit: 5,
                period: Duration::from_secs(60),
            })
        );
        assert_eq!(
            (c.rate_limit, c.key_limit, c.fair_shares),
            (None, None, false)
        );
        assert!(c.keyed() && c.restricts());
        let c = control(&full(
            false,
            None,
            Some(10),
            Some(1_000_000),
            (None, false, None),
            (Some(2), Some(3_000_000)),
        ))
        .unwrap();
        assert_eq!(
            c.rate_limit.map(|r| (r.limit, r.period_us())),
            Some((10, 1_000_000))
        );
        assert_eq!(
            c.key_rate_limit.map(|r| (r.limit, r.period_us())),
            Some((2, 3_000_000))
        );
        // Half a key rate limit, or one the columns' checks forbid, is none.
        for (rate, period) in [
            (Some(5), None),
            (None, Some(1_000_000)),
            (Some(-1), Some(1_000_000)),
            (Some(5), Some(-1)),
        ] {
            let c = control(&key_rated(rate, period)).unwrap();
            assert_eq!(c.key_rate_limit, None, "{rate:?} per {period:?}");
            assert!(!c.keyed() && !c.restricts());
        }
        // fair_shares is NOT NULL: a NULL is a malformed row.
        let null_fair = Row::builder()
            .column("name", ColumnType::NVarchar, "emails".into_sql())
            .column("paused", ColumnType::Bit, false.into_sql())
            .column(
                "concurrency_limit",
                ColumnType::Int4,
                None::<i32>.into_sql(),
            )
            .column("rate_limit", ColumnType::Int4, None::<i32>.into_sql())
            .column("rate_period_us", ColumnType::Int8, None::<i64>.into_sql())
            .column("key_limit", ColumnType::Int4, None::<i32>.into_sql())
            .column("fair_shares", ColumnType::Bit, None::<bool>.into_sql())
            .column(
                "key_cursor",
                ColumnType::BigVarBin,
                None::<Vec<u8>>.into_sql(),
            )
            .column("key_rate_limit", ColumnType::Int4, None::<i32>.into_sql())
            .column(
                "key_rate_period_us",
                ColumnType::Int8,
                None::<i64>.into_sql(),
            )
            .build();
        assert!(control(&null_fair).is_err());
    }

    #[test]
    fn key_lease_rows_decode() {
        let row = |key: Option<&str>, n: i64| {
            Row::builder()
                .column(
                    "concurrency_key",
                    ColumnType::BigVarBin,
                    key.map(|k| k.as_bytes().to_vec()).into_sql(),
                )
                .column("running", ColumnType::Int8, n.into_sql())
                .build()
        };
        assert_eq!(
            key_leases(&[row(Some("acme"), 3), row(Some("Acme"), 1)]).unwrap(),
            vec![("acme".to_owned(), 3), ("Acme".to_owned(), 1)]
        );
        assert_eq!(key_leases(&[]).unwrap(), Vec::<(String, u64)>::new());
        // The statement leaves out jobs without a key: a NULL key is a malformed row.
        assert!(key_leases(&[row(None, 1)]).is_err());
        // The next key: NULL past the last.
        let next = |key: Option<Vec<u8>>| {
            Row::builder()
                .column("next_key", ColumnType::BigVarBin, key.into_sql())
                .build()
        };
        assert_eq!(
            key_column(&next(Some("tenant-ü".as_bytes().to_vec())), "next_key").unwrap(),
            Some("tenant-ü".to_owned())
        );
        assert_eq!(key_column(&next(None), "next_key").unwrap(), None);
        assert!(key_column(&next(Some(vec![0xc3])), "next_key").is_err());
    }

    #[test]
    fn key_values_follow_the_statements() {
        let p = JobClaim {
            queue: "q",
            limit: 5_000,
            lease: Duration::from_micros(90_000_001),
            worker: "w",
            controls_checked: true,
        };
        // job_claim_key: job_claim's first five, then the key's bytes in place of the flag.
        let keyed = claim_key_values(p, Some("Acmé"));
        let ordinary = claim_values(p);
        assert_eq!(keyed.values()[..5], ordinary.values()[..5]);
        assert_eq!(
            keyed.values()[1],
            ColumnData::I64(Some(MAX_ROWS_PER_STATEMENT as i64))
        );
        assert_eq!(
            keyed.values()[5],
            ColumnData::Binary(Some("Acmé".as_bytes().into()))
        );
        assert_eq!(keyed.len(), 6);
        // job_claim_unkeyed: the five alone.
        let unkeyed = claim_key_values(p, None);
        assert_eq!(unkeyed.values(), &ordinary.values()[..5]);
        // job_key_next from the start: the empty value (below every key), not NULL.
        let v = key_next_values("q", "", 32);
        assert_eq!(
            v.values(),
            &[
                ColumnData::String(Some("q".into())),
                ColumnData::Binary(Some(b"".as_slice().into())),
                ColumnData::I64(Some(32)),
            ]
        );
        // The cursor: the key's bytes, or a typed NULL for the jobs without a key.
        let v = key_cursor_values("q", Some("b"));
        assert_eq!(
            v.values()[1],
            ColumnData::Binary(Some(b"b".as_slice().into()))
        );
        assert_eq!(
            key_cursor_values("q", None).values()[1],
            ColumnData::Binary(None)
        );
        // The key limit as `int`, as the concurrency limit.
        let v = set_limit_values("q", Some(4));
        assert_eq!(v.values()[1], ColumnData::I32(Some(4)));
    }

    #[test]
    fn rate_state_rows_decode() {
        let row = |window: Option<i64>, count: i32| {
            Row::builder()
                .column("rate_window", ColumnType::Int8, window.into_sql())
                .column("rate_count", ColumnType::Int4, count.into_sql())
                .column(
                    "now_us",
                    ColumnType::Int8,
                    1_800_000_000_123_456i64.into_sql(),
                )
                .build()
        };
        assert_eq!(
            rate_state(&row(None, 0)).unwrap(),
            RateState {
                window: None,
                count: 0,
                now_us: 1_800_000_000_123_456,
            }
        );
        let s = rate_state(&row(Some(1_800_000), 7)).unwrap();
        assert_eq!((s.window, s.count), (Some(1_800_000), 7));
        // A NULL clock is a decoding error, never a window of its own.
        let no_clock = Row::builder()
            .column("rate_window", ColumnType::Int8, None::<i64>.into_sql())
            .column("rate_count", ColumnType::Int4, 0i32.into_sql())
            .column("now_us", ColumnType::Int8, None::<i64>.into_sql())
            .build();
        assert!(rate_state(&no_clock).is_err());
    }

    #[test]
    fn rate_values_follow_the_statements() {
        // queue_set_rate: the queue, the starts as `int`, the window as `bigint`.
        let v = set_rate_values("q", Some((25, 60_000_000)));
        assert_eq!(
            v.values(),
            &[
                ColumnData::String(Some("q".into())),
                ColumnData::I32(Some(25)),
                ColumnData::I64(Some(60_000_000)),
            ]
        );
        let v = set_rate_values("q", None);
        assert_eq!(
            v.values()[1..],
            [ColumnData::I32(None), ColumnData::I64(None)]
        );
        // queue_rate_record: the queue, the window as `bigint`, the count as `int`.
        let v = rate_record_values("q", 29_999_999, 3);
        assert_eq!(
            v.values(),
            &[
                ColumnData::String(Some("q".into())),
                ColumnData::I64(Some(29_999_999)),
                ColumnData::I32(Some(3)),
            ]
        );
        // queue_set_key_rate binds queue_set_rate's values, in its order: the limit as `int`
        // (key_rate_limit) and the window as `bigint` (key_rate_period_us), both NULL when the
        // limit is removed.
        let v = set_rate_values("q", Some((2, 1_000_000)));
        assert_eq!(
            v.values()[1..],
            [ColumnData::I32(Some(2)), ColumnData::I64(Some(1_000_000))]
        );
        // queue_key_rate_put: the queue, the key's bytes exactly (case and trailing spaces
        // kept), the window as `bigint`, the count as `int` (saturated, never wrapped).
        let v = key_rate_put_values("q", "Acmé ", 1_800_000, 4);
        assert_eq!(
            v.values(),
            &[
                ColumnData::String(Some("q".into())),
                ColumnData::Binary(Some("Acmé ".as_bytes().into())),
                ColumnData::I64(Some(1_800_000)),
                ColumnData::I32(Some(4)),
            ]
        );
        assert_eq!(
            key_rate_put_values("q", "k", 1, u32::MAX).values()[3],
            ColumnData::I32(Some(i32::MAX))
        );
        // queue_key_rate_get: the queue and the key's bytes, as job_key_waiting binds them.
        assert_eq!(
            key_values("q", "Acmé ").values(),
            &[
                ColumnData::String(Some("q".into())),
                ColumnData::Binary(Some("Acmé ".as_bytes().into())),
            ]
        );
    }

    /// Every write of a queue's controls (an UPDATE, then an INSERT when it changed no row;
    /// queue_set_key_rate also drops the keys' counts) goes out as one request inside a
    /// transaction of the driver's, each verb a batch of its own (never inside
    /// `sp_executesql`), so the UPDATE's key lock lasts until the INSERT is done.
    #[tokio::test]
    async fn control_writes_go_out_in_a_transaction_of_the_drivers() {
        let q = || Some(vec![b'q', 0]);
        let writes: [(&str, Vec<Option<Vec<u8>>>); 6] = [
            ("queue_set_paused", vec![q(), Some(vec![1])]),
            (
                "queue_set_limit",
                vec![q(), Some(3i32.to_le_bytes().to_vec())],
            ),
            ("queue_set_rate", vec![q(), None, None]),
            ("queue_set_key_limit", vec![q(), None]),
            ("queue_set_fair", vec![q(), Some(vec![0])]),
            (
                "queue_set_key_rate",
                vec![
                    q(),
                    Some(2i32.to_le_bytes().to_vec()),
                    Some(1_000_000i64.to_le_bytes().to_vec()),
                ],
            ),
        ];
        for (name, values) in writes {
            let (driver, server) = stand_in().await;
            let written = match name {
                "queue_set_paused" => driver.queue_set_paused("q", true).await,
                "queue_set_limit" => driver.queue_set_limit("q", Some(3)).await,
                "queue_set_rate" => driver.queue_set_rate("q", None).await,
                "queue_set_key_limit" => driver.queue_set_key_limit("q", None).await,
                "queue_set_fair" => driver.queue_set_fair("q", false).await,
                _ => driver.queue_set_key_rate("q", Some((2, 1_000_000))).await,
            };
            written.unwrap();
            let statement = driver
                .sql
                .all()
                .into_iter()
                .find(|(n, _)| *n == name)
                .map(|(_, text)| text.to_owned())
                .unwrap();
            drop(driver);
            let requests = server.await.unwrap();
            // From the transaction on (the session's settings and checks come before it).
            let begin = crate::wire::Request::Batch("BEGIN TRANSACTION".into());
            let from = requests.iter().position(|r| *r == begin).unwrap();
            let [crate::wire::Request::Rpc(sent, params), crate::wire::Request::Batch(commit)] =
                &requests[from + 1..]
            else {
                panic!("{name}: not one request, then the commit: {requests:?}");
            };
            assert_eq!(*sent, statement, "{name}");
            assert!(
                sent.starts_with("UPDATE [s].[queues] WITH (UPDLOCK, HOLDLOCK)")
                    && sent.contains("IF @@ROWCOUNT = 0")
                    && !sent.contains("MERGE"),
                "{name}: {sent}"
            );
            let sent_values: Vec<Option<Vec<u8>>> =
                params.iter().map(|p| p.value.clone()).collect();
            assert_eq!(sent_values, values, "{name}");
            assert!(commit.starts_with("COMMIT TRANSACTION"), "{name}: {commit}");
            // Nothing of the transaction's went inside the request.
            assert!(
                !requests[..from]
                    .iter()
                    .any(|r| matches!(r, crate::wire::Request::Rpc(..))),
                "{name}"
            );
        }
    }

    #[test]
    fn key_rate_rows_decode() {
        let row = |window: Option<i64>, count: Option<i32>| {
            Row::builder()
                .column("rate_window", ColumnType::Int8, window.into_sql())
                .column("rate_count", ColumnType::Int4, count.into_sql())
                .build()
        };
        assert_eq!(
            key_rate(&row(Some(1_800_000), Some(7))).unwrap(),
            (1_800_000, 7)
        );
        // Windows before the epoch are negative, and kept.
        assert_eq!(key_rate(&row(Some(-3), Some(1))).unwrap(), (-3, 1));
        // Both columns are NOT NULL: a NULL is a malformed row, never a window of its own.
        assert!(key_rate(&row(None, Some(1))).is_err());
        assert!(key_rate(&row(Some(1), None)).is_err());
    }

    #[test]
    fn claim_values_follow_the_statement() {
        let p = JobClaim {
            queue: "q",
            limit: 5_000,
            lease: Duration::from_micros(90_000_001),
            worker: "w",
            controls_checked: true,
        };
        let v = claim_values(p);
        let v = v.values();
        assert_eq!(v.len(), 6);
        assert_eq!(v[1], ColumnData::I64(Some(MAX_ROWS_PER_STATEMENT as i64)));
        assert_eq!(v[2], ColumnData::I32(Some(90)));
        assert_eq!(v[3], ColumnData::I32(Some(1)));
        assert_eq!(v[5], ColumnData::Bit(Some(true)));
        let unchecked = claim_values(JobClaim {
            controls_checked: false,
            ..p
        });
        assert_eq!(unchecked.values()[5], ColumnData::Bit(Some(false)));
    }

    #[test]
    fn chunks_cover_every_item_once() {
        assert_eq!(chunks(0, 250), Vec::<(usize, usize)>::new());
        assert_eq!(chunks(1, 250), vec![(0, 1)]);
        assert_eq!(chunks(250, 250), vec![(0, 250)]);
        assert_eq!(chunks(251, 250), vec![(0, 250), (250, 251)]);
        let c = chunks(10_000, INSERT_ROWS);
        assert_eq!(c.len(), 10_000usize.div_ceil(INSERT_ROWS));
        assert!(c.windows(2).all(|w| w[0].1 == w[1].0));
        assert_eq!(c.last().map(|l| l.1), Some(10_000));
    }

    fn schedule(at: DateTime<Utc>) -> StoredSchedule {
        StoredSchedule {
            name: "nightly".into(),
            expression: "0 3 * * *".into(),
            time_zone: "UTC".into(),
            queue: "q".into(),
            kind: Some("nightly.report".into()),
            payload: "{}".into(),
            priority: 0,
            max_attempts: 3,
            misfire: "skip".into(),
            misfire_max: 1,
            origin: "operator".into(),
            since: at,
            last_slot: None,
            last_job: None,
            expires_at: None,
            version: 1,
            created_at: at,
            updated_at: at,
            last_job_state: None,
        }
    }

    /// Every statement that can bind a NULL, with each of those values NULL, as sent to a
    /// server: each NULL is sent as its own placeholder's type (the type the request declares
    /// it as, and the type of the column or comparison it meets), never as the untyped NULL.
    #[tokio::test]
    async fn every_null_the_statements_bind_goes_out_typed() {
        let sql = Statements::new(&[("{schema}", "s")]);
        let jobs = [queue_core::NewJob::from_json("q", "1").unwrap()];
        let insert = JobInsert {
            jobs: &jobs,
            delays: &[Duration::ZERO],
            notify: &[],
        };
        let prune = JobPrune {
            states: &[JobState::Completed],
            older_than: Duration::from_secs(60),
            queue: None,
            limit: 10,
        };
        let list = ListRequest::default();
        let every_job = JobMatch {
            queue: None,
            states: &[JobState::Dead],
            kind: None,
            older_than: None,
            before: None,
            limit: 1_000,
        };
        let stored = schedule(at(0));
        let lease = Lease {
            job_id: JobId::new(),
            queue: "q".into(),
            token: Uuid::new_v4(),
            expires_at: at(0),
            attempt: 1,
            max_attempts: 1,
            workflow: None,
        };
        // A statement, its text, its values, and the placeholders that are NULL with the types
        // they are declared as.
        type Case<'a> = (&'a str, String, Params<'a>, &'a [(usize, &'a str)]);
        let key = [7u8; 32];
        let claim = JobClaim {
            queue: "q",
            limit: 10,
            lease: Duration::from_secs(30),
            worker: "w",
            controls_checked: true,
        };
        let unique = JobInsertUnique {
            job: &jobs[0],
            delay: Duration::ZERO,
            key: &key,
            states: 7,
        };
        let cases: Vec<Case<'_>> = vec![
            (
                "job_insert",
                sql.job_insert_rows(1),
                insert_values(&insert, 0, 1),
                &[
                    (8, "varbinary(max)"),
                    (9, "nvarchar(4000)"),
                    (10, "nvarchar(4000)"),
                    (11, "bigint"),
                    (12, "varbinary(max)"),
                    (14, "varbinary(max)"),
                ],
            ),
            (
                "job_insert_unique",
                sql.job_insert_unique.to_string(),
                unique_insert_values(&unique),
                &[
                    (8, "varbinary(max)"),
                    (9, "nvarchar(4000)"),
                    (10, "nvarchar(4000)"),
                    (11, "bigint"),
                    (14, "varbinary(max)"),
                ],
            ),
            (
                "job_list",
                sql.job_list.to_string(),
                list_values(&list),
                &[
                    (1, "nvarchar(4000)"),
                    (2, "nvarchar(4000)"),
                    (3, "varbinary(max)"),
                    (5, "nvarchar(4000)"),
                ],
            ),
            (
                "job_complete",
                sql.job_complete.to_string(),
                params![lease.job_id, lease.token, None::<&str>],
                &[(3, "nvarchar(4000)")],
            ),
            (
                "job_reschedule",
                sql.job_reschedule.to_string(),
                reschedule_values(JobReschedule {
                    id: JobId::new(),
                    delay: None,
                    priority: None,
                }),
                &[(2, "int"), (3, "int"), (4, "int")],
            ),
            (
                "job_stats",
                sql.job_stats.to_string(),
                params![None::<&str>, stats_cap(None)],
                &[(1, "nvarchar(4000)")],
            ),
            (
                "job_ids",
                sql.job_ids_for(1),
                ids_values(&every_job),
                &[
                    (1, "nvarchar(4000)"),
                    (2, "nvarchar(4000)"),
                    (3, "int"),
                    (4, "int"),
                    (5, "varbinary(max)"),
                ],
            ),
            (
                "job_count",
                sql.job_count_for(1),
                count_values(&every_job),
                &[
                    (1, "nvarchar(4000)"),
                    (2, "nvarchar(4000)"),
                    (3, "int"),
                    (4, "int"),
                ],
            ),
            (
                "job_prune",
                sql.job_prune_for(1),
                prune_values(&prune, 10),
                &[(3, "nvarchar(4000)")],
            ),
            (
                "queue_set_limit",
                sql.queue_set_limit.to_string(),
                set_limit_values("q", None),
                &[(2, "int")],
            ),
            (
                "queue_set_rate",
                sql.queue_set_rate.to_string(),
                set_rate_values("q", None),
                &[(2, "int"), (3, "bigint")],
            ),
            (
                "queue_rate_record",
                sql.queue_rate_record.to_string(),
                rate_record_values("q", 1, 1),
                &[],
            ),
            (
                "queue_set_key_limit",
                sql.queue_set_key_limit.to_string(),
                set_limit_values("q", None),
                &[(2, "int")],
            ),
            (
                "queue_set_fair",
                sql.queue_set_fair.to_string(),
                params!["q", false],
                &[],
            ),
            (
                "queue_key_cursor",
                sql.queue_key_cursor.to_string(),
                key_cursor_values("q", None),
                &[(2, "varbinary(max)")],
            ),
            (
                "queue_set_key_rate",
                sql.queue_set_key_rate.to_string(),
                set_rate_values("q", None),
                &[(2, "int"), (3, "bigint")],
            ),
            (
                "queue_key_rate_get",
                sql.queue_key_rate_get.to_string(),
                key_values("q", "k"),
                &[],
            ),
            (
                "queue_key_rate_put",
                sql.queue_key_rate_put.to_string(),
                key_rate_put_values("q", "k", 1, 1),
                &[],
            ),
            (
                "queue_key_rate_prune",
                sql.queue_key_rate_prune.to_string(),
                key_rate_prune_values("q", 7, 10),
                &[],
            ),
            (
                "job_key_next",
                sql.job_key_next.to_string(),
                key_next_values("q", "", 32),
                &[],
            ),
            (
                "job_claim_key",
                sql.job_claim_key.to_string(),
                claim_key_values(claim, Some("k")),
                &[],
            ),
            (
                "job_claim_unkeyed",
                sql.job_claim_unkeyed.to_string(),
                claim_key_values(claim, None),
                &[],
            ),
            (
                "schedule_insert",
                sql.schedule_insert.to_string(),
                schedule_insert_values(&stored),
                &[(12, "datetime2"), (13, "varbinary(max)"), (14, "datetime2")],
            ),
            (
                "schedule_update",
                sql.schedule_update.to_string(),
                schedule_update_values(&stored, 1),
                &[(12, "datetime2"), (13, "varbinary(max)"), (14, "datetime2")],
            ),
            (
                "workflow_insert",
                sql.workflow_insert.to_string(),
                workflow_insert_values(&WorkflowInsert {
                    id: WorkflowId::new(),
                    name: None,
                    open: false,
                    callback: None,
                }),
                &[(2, "nvarchar(4000)"), (4, "varbinary(max)")],
            ),
            (
                "workflow_steps_insert",
                sql.workflow_steps_insert_for(1),
                steps_values(WorkflowId::new(), &[(JobId::new(), "a")]),
                &[],
            ),
            (
                "workflow_deps_insert",
                sql.workflow_deps_insert_for(1),
                edges_values(&[WorkflowEdge {
                    job: JobId::new(),
                    dep: JobId::new(),
                    policy: DepPolicy::AnyOutcome,
                }]),
                &[],
            ),
            (
                "workflow_waiting",
                sql.workflow_waiting.to_string(),
                params![None::<JobId>, limit(100)],
                &[(1, "varbinary(max)")],
            ),
            (
                "workflow_list",
                sql.workflow_list.to_string(),
                params![None::<WorkflowId>, limit(50)],
                &[(1, "varbinary(max)")],
            ),
        ];
        let expected: Vec<(&str, &[(usize, &str)])> = cases
            .iter()
            .map(|(name, _, _, nulls)| (*name, *nulls))
            .collect();
        let requests = crate::wire::sent(
            cases
                .into_iter()
                .map(|(_, text, params, _)| (text, params))
                .collect(),
        )
        .await;
        assert_eq!(requests.len(), expected.len());
        for ((name, nulls), sent) in expected.into_iter().zip(requests) {
            let got: Vec<(usize, &str)> = sent
                .iter()
                .enumerate()
                .filter(|(_, p)| p.value.is_none())
                .map(|(i, p)| (i + 1, p.declared.as_str()))
                .collect();
            assert_eq!(got, nulls, "{name}: the NULL placeholders");
            for p in &sent {
                assert_eq!(
                    Some((p.ty, p.size)),
                    crate::wire::wire_type(&p.declared),
                    "{name}: {} is not sent as it is declared: {p:?}",
                    p.name
                );
            }
        }
    }

    #[test]
    fn unique_insert_values_follow_the_statement() {
        let job = queue_core::NewJob::from_json("q", r#"{"a":1}"#)
            .unwrap()
            .dedup_key("k")
            .kind("sync")
            .priority(4)
            .max_attempts(6)
            .concurrency_key("tenant-7");
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let p = JobInsertUnique {
            job: &job,
            delay: Duration::from_micros(3_000_250),
            key: &key,
            states: 1 | 2 | 8,
        };
        let v = unique_insert_values(&p);
        let v = v.values();
        assert_eq!(v.len(), 14);
        assert_eq!(
            v[0],
            ColumnData::Binary(Some(job.id().0.as_bytes().to_vec().into()))
        );
        assert_eq!(v[1], ColumnData::String(Some("q".into())));
        assert_eq!(v[2], ColumnData::String(Some(r#"{"a":1}"#.into())));
        assert_eq!(v[3], ColumnData::I32(Some(4)));
        assert_eq!(v[4], ColumnData::I32(Some(6)));
        assert_eq!(v[5], ColumnData::I32(Some(3)));
        assert_eq!(v[6], ColumnData::I32(Some(250)));
        assert_eq!(v[7], ColumnData::Binary(Some(b"k".as_slice().into())));
        assert_eq!(v[8], ColumnData::String(Some("sync".into())));
        assert_eq!(v[9], ColumnData::String(None));
        assert_eq!(v[10], ColumnData::I64(None));
        assert_eq!(v[11], ColumnData::Binary(Some(key.as_slice().into())));
        assert_eq!(v[12], ColumnData::I32(Some(11)));
        assert_eq!(
            v[13],
            ColumnData::Binary(Some(b"tenant-7".as_slice().into()))
        );

        let replace = unique_replace_values(&JobUniqueReplace {
            id: JobId(Uuid::now_v7()),
            job: &job,
            delay: Duration::from_secs(90),
        });
        let r = replace.values();
        assert_eq!(r.len(), 5);
        assert_eq!(r[1], ColumnData::String(Some(r#"{"a":1}"#.into())));
        assert_eq!(r[2], ColumnData::I32(Some(4)));
        assert_eq!(
            (&r[3], &r[4]),
            (&ColumnData::I32(Some(90)), &ColumnData::I32(Some(0)))
        );
    }

    #[test]
    fn unique_insert_rows_say_what_became_of_the_job() {
        let row = |inserted: i32, holder: Option<Uuid>| {
            Row::builder()
                .column("inserted", ColumnType::Int4, inserted.into_sql())
                .column(
                    "holder",
                    ColumnType::BigBinary,
                    holder.map(|h| h.as_bytes().to_vec()).into_sql(),
                )
                .build()
        };
        assert_eq!(
            unique_insert_outcome(&[row(1, None)]).unwrap(),
            UniqueInsert::Inserted
        );
        let holder = Uuid::now_v7();
        assert_eq!(
            unique_insert_outcome(&[row(0, Some(holder))]).unwrap(),
            UniqueInsert::Held(JobId(holder))
        );
        assert_eq!(unique_insert_outcome(&[]).unwrap(), UniqueInsert::Released);
        // A held key without a holder's id is a malformed row, not a guess.
        assert!(unique_insert_outcome(&[row(0, None)]).is_err());
    }

    #[test]
    fn insert_values_follow_the_statement() {
        let jobs = vec![
            queue_core::NewJob::from_json("q", "1")
                .unwrap()
                .dedup_key("k")
                .kind("send")
                .meta(&serde_json::json!({"a": 1}))
                .unwrap()
                .timeout(Duration::from_millis(2)),
            queue_core::NewJob::from_json("q", "\"x\"")
                .unwrap()
                .priority(3)
                .concurrency_key("Acmé"),
        ];
        let delays = [
            Duration::from_secs(3600 * 24 * 365 * 10),
            Duration::from_micros(1_500_000),
        ];
        let p = JobInsert {
            jobs: &jobs,
            delays: &delays,
            notify: &[],
        };
        let v = insert_values(&p, 0, 2);
        let v = v.values();
        assert_eq!(v.len(), 2 * INSERT_VALUES);
        assert_eq!(v[5], ColumnData::I32(Some(315_360_000)));
        assert_eq!(v[6], ColumnData::I32(Some(0)));
        assert_eq!(v[7], ColumnData::Binary(Some(b"k".as_slice().into())));
        assert_eq!(v[8], ColumnData::String(Some("send".into())));
        assert_eq!(v[9], ColumnData::String(Some(r#"{"a":1}"#.into())));
        assert_eq!(v[10], ColumnData::I64(Some(2_000)));
        assert_eq!(v[11], ColumnData::Binary(None), "no concurrency key");
        // A job pushed alone: pending (its state bound, as a workflow's waiting step's is), no
        // workflow (a NULL of the id's type).
        assert_eq!(v[12], ColumnData::String(Some("pending".into())));
        assert_eq!(v[13], ColumnData::Binary(None));
        assert_eq!(v[17], ColumnData::I32(Some(3)));
        assert_eq!(v[19], ColumnData::I32(Some(1)));
        assert_eq!(v[20], ColumnData::I32(Some(500_000)));
        assert_eq!(v[21], ColumnData::Binary(None));
        assert_eq!(v[22], ColumnData::String(None));
        assert_eq!(v[23], ColumnData::String(None));
        assert_eq!(v[24], ColumnData::I64(None));
        // The key as its UTF-8 bytes (binary comparisons, whatever the collation).
        assert_eq!(v[25], ColumnData::Binary(Some("Acmé".as_bytes().into())));
        assert_eq!(v[26], ColumnData::String(Some("pending".into())));
        assert_eq!(v[27], ColumnData::Binary(None));
    }
    #[test]
    fn bulk_values_follow_the_statements() {
        let before = JobId(Uuid::now_v7());
        let states = [JobState::Completed, JobState::Cancelled];
        let m = JobMatch {
            queue: Some("q"),
            states: &states,
            kind: Some("sync"),
            older_than: Some(Duration::from_micros(3_600_000_250)),
            before: Some(before),
            limit: 1_000,
        };
        let ids = ids_values(&m);
        let v = ids.values();
        assert_eq!(v.len(), 6 + states.len());
        assert_eq!(v[0], ColumnData::String(Some("q".into())));
        assert_eq!(v[1], ColumnData::String(Some("sync".into())));
        // Past DATEADD's int of microseconds: whole seconds, then the rest.
        assert_eq!(v[2], ColumnData::I32(Some(3_600)));
        assert_eq!(v[3], ColumnData::I32(Some(250)));
        assert_eq!(
            v[4],
            ColumnData::Binary(Some(before.0.as_bytes().to_vec().into()))
        );
        assert_eq!(v[5], ColumnData::I64(Some(1_000)));
        assert_eq!(v[6], ColumnData::String(Some("completed".into())));
        assert_eq!(v[7], ColumnData::String(Some("cancelled".into())));
        // job_count: the same filter, the states right after it.
        let counted = count_values(&m);
        let c = counted.values();
        assert_eq!(c.len(), 4 + states.len());
        assert_eq!(&c[..4], &v[..4]);
        assert_eq!(&c[4..], &v[6..]);
        // A list of ids, then the states.
        let a = JobId(Uuid::now_v7());
        let listed = id_values(&[a, before], &states[..1]);
        let l = listed.values();
        assert_eq!(l.len(), 3);
        assert_eq!(
            l[0],
            ColumnData::Binary(Some(a.0.as_bytes().to_vec().into()))
        );
        assert_eq!(l[2], ColumnData::String(Some("completed".into())));
        assert_eq!(id_values(&[a], &[]).len(), 1);
    }

    #[test]
    fn the_stats_cap_is_never_null() {
        assert_eq!(stats_cap(None), i64::MAX);
        assert_eq!(stats_cap(Some(3)), 3);
        assert_eq!(stats_cap(Some(u64::MAX)), i64::MAX);
    }

    #[test]
    fn stats_rows_decode() {
        let row = Row::builder()
            .column("queue", ColumnType::NVarchar, "emails".into_sql())
            .column("waiting", ColumnType::Int8, 9i64.into_sql())
            .column("available", ColumnType::Int8, 4i64.into_sql())
            .column("scheduled", ColumnType::Int8, 1i64.into_sql())
            .column("running", ColumnType::Int8, 2i64.into_sql())
            .column("oldest_due", ColumnType::Datetime2, at(0).into_sql())
            .column("completed", ColumnType::Int8, 3i64.into_sql())
            .column("dead", ColumnType::Int8, 0i64.into_sql())
            .column("cancelled", ColumnType::Int8, 7i64.into_sql())
            .build();
        let s = stats_from_row(&row).unwrap();
        assert_eq!(s.queue, "emails");
        assert_eq!(s.oldest_due, Some(at(0)));
        assert_eq!(s.waiting, 9);
        assert_eq!(
            (
                s.available,
                s.scheduled,
                s.running,
                s.completed,
                s.dead,
                s.cancelled
            ),
            (4, 1, 2, 3, 0, 7)
        );
        // The engine sets the cap it counted with.
        assert_eq!(s.count_cap, None);
    }

    #[test]
    fn workflow_values_follow_the_statements() {
        let id = WorkflowId::new();
        let callback = JobId::new();
        let bytes = |b: &[u8]| ColumnData::Binary(Some(b.to_vec().into()));
        // workflow_insert: id, name, open, callback.
        let v = workflow_insert_values(&WorkflowInsert {
            id,
            name: Some("album-42"),
            open: true,
            callback: Some(callback),
        });
        assert_eq!(
            v.values(),
            &[
                bytes(id.0.as_bytes()),
                ColumnData::String(Some("album-42".into())),
                ColumnData::Bit(Some(true)),
                bytes(callback.0.as_bytes()),
            ]
        );
        // workflow_steps_insert: the workflow, then each job and its step.
        let (a, b) = (JobId::new(), JobId::new());
        let v = steps_values(id, &[(a, "fetch"), (b, "resize ✂")]);
        assert_eq!(
            v.values(),
            &[
                bytes(id.0.as_bytes()),
                bytes(a.0.as_bytes()),
                ColumnData::String(Some("fetch".into())),
                bytes(b.0.as_bytes()),
                ColumnData::String(Some("resize ✂".into())),
            ]
        );
        // workflow_deps_insert: per edge the job depended on, the job that waits, the code.
        let v = edges_values(&[
            WorkflowEdge {
                job: b,
                dep: a,
                policy: DepPolicy::Completed,
            },
            WorkflowEdge {
                job: a,
                dep: b,
                policy: DepPolicy::AnyOutcome,
            },
        ]);
        assert_eq!(
            v.values(),
            &[
                bytes(a.0.as_bytes()),
                bytes(b.0.as_bytes()),
                ColumnData::I32(Some(0)),
                bytes(b.0.as_bytes()),
                bytes(a.0.as_bytes()),
                ColumnData::I32(Some(1)),
            ]
        );
    }

    fn workflow_row(
        id: Uuid,
        name: Option<&'static str>,
        open: bool,
        callback: Option<Uuid>,
    ) -> Row {
        workflow_count_row(id, name, open, callback, None, 0)
    }

    /// A row of `workflow_list` (the columns of `workflow_get`, then a state and a count).
    fn workflow_count_row(
        id: Uuid,
        name: Option<&'static str>,
        open: bool,
        callback: Option<Uuid>,
        state: Option<&'static str>,
        n: i64,
    ) -> Row {
        Row::builder()
            .column(
                "id",
                ColumnType::BigBinary,
                id.as_bytes().to_vec().into_sql(),
            )
            .column("name", ColumnType::NVarchar, name.into_sql())
            .column("open", ColumnType::Bit, open.into_sql())
            .column(
                "callback",
                ColumnType::BigBinary,
                callback.map(|c| c.as_bytes().to_vec()).into_sql(),
            )
            .column("created_at", ColumnType::Datetime2, at(0).into_sql())
            .column("state", ColumnType::NVarchar, state.into_sql())
            .column("jobs", ColumnType::Int8, n.into_sql())
            .build()
    }

    #[test]
    fn workflow_rows_decode() {
        let (id, callback) = (Uuid::now_v7(), Uuid::now_v7());
        let w =
            workflow_from_row(&workflow_row(id, Some("nightly"), true, Some(callback))).unwrap();
        assert_eq!(
            w,
            StoredWorkflow {
                id: WorkflowId(id),
                name: Some("nightly".into()),
                open: true,
                callback: Some(JobId(callback)),
                created_at: at(0),
            }
        );
        let w = workflow_from_row(&workflow_row(id, None, false, None)).unwrap();
        assert_eq!((w.name, w.open, w.callback), (None, false, None));

        // Edges: the policy as stored (SMALLINT).
        let edge = |policy: Option<i16>| {
            Row::builder()
                .column(
                    "job_id",
                    ColumnType::BigBinary,
                    id.as_bytes().to_vec().into_sql(),
                )
                .column(
                    "dep_id",
                    ColumnType::BigBinary,
                    callback.as_bytes().to_vec().into_sql(),
                )
                .column("policy", ColumnType::Int2, policy.into_sql())
                .build()
        };
        assert_eq!(
            edge_from_row(&edge(Some(1))).unwrap(),
            WorkflowEdge {
                job: JobId(id),
                dep: JobId(callback),
                policy: DepPolicy::AnyOutcome,
            }
        );
        assert_eq!(
            edge_from_row(&edge(Some(0))).unwrap().policy,
            DepPolicy::Completed
        );
        assert!(edge_from_row(&edge(None)).is_err());

        // Dependencies: a finished one with its output, and one whose job was deleted.
        let dep =
            |state: Option<&'static str>, output: Option<&'static str>, step: &'static str| {
                Row::builder()
                    .column(
                        "dep_id",
                        ColumnType::BigBinary,
                        id.as_bytes().to_vec().into_sql(),
                    )
                    .column("step", ColumnType::NVarchar, step.into_sql())
                    .column("policy", ColumnType::Int2, 0i16.into_sql())
                    .column("state", ColumnType::NVarchar, state.into_sql())
                    .column("output", ColumnType::NVarchar, output.into_sql())
                    .build()
            };
        let d = dependency_from_row(&dep(Some("completed"), Some(r#"{"n":1}"#), "a")).unwrap();
        assert_eq!(
            (d.id, d.step.as_str(), d.policy, d.state),
            (
                JobId(id),
                "a",
                DepPolicy::Completed,
                Some(JobState::Completed)
            )
        );
        assert_eq!(d.output.as_deref().map(RawValue::get), Some(r#"{"n":1}"#));
        let gone = dependency_from_row(&dep(None, None, "")).unwrap();
        assert_eq!((gone.state, gone.output.is_none()), (None, true));
        assert!(dependency_from_row(&dep(Some("zombie"), None, "a")).is_err());
    }

    #[test]
    fn a_workflows_jobs_decode_with_their_steps() {
        let workflow = Uuid::now_v7();
        let row = |step: Option<&'static str>| {
            let row = claimed_row(None, None, Some(workflow));
            // A row of workflow_jobs has job_list's columns and the step.
            let mut b = Row::builder();
            for (c, v) in row.cells() {
                b = b.column(c.name(), c.column_type(), v.clone());
            }
            b.column("step", ColumnType::NVarchar, step.into_sql())
                .build()
        };
        let job = workflow_job_from_row(&row(Some("fetch"))).unwrap();
        assert_eq!(job.step.as_deref(), Some("fetch"));
        assert_eq!(job.workflow, Some(WorkflowId(workflow)));
        // workflow_jobs joins workflow_jobs: every row has its step.
        assert!(workflow_job_from_row(&row(None)).is_err());
    }

    #[test]
    fn workflow_list_rows_group_by_workflow_newest_first() {
        let (new, old, empty) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let rows = [
            workflow_count_row(new, Some("n"), false, None, Some("running"), 1),
            workflow_count_row(new, Some("n"), false, None, Some("waiting"), 3),
            // Its deleted jobs: no state, nothing counted.
            workflow_count_row(new, Some("n"), false, None, None, 0),
            workflow_count_row(old, None, true, Some(empty), Some("completed"), 2),
            // A workflow whose jobs were all deleted.
            workflow_count_row(empty, None, false, None, None, 0),
        ];
        let listed = workflow_list_from_rows(&rows).unwrap();
        let ids: Vec<WorkflowId> = listed.iter().map(|(w, _)| w.id).collect();
        assert_eq!(ids, [WorkflowId(new), WorkflowId(old), WorkflowId(empty)]);
        // Counts in lifecycle order, whatever order the rows came in.
        assert_eq!(
            listed[0].1,
            [(JobState::Waiting, 3), (JobState::Running, 1)]
        );
        assert_eq!(listed[0].0.name.as_deref(), Some("n"));
        assert_eq!(listed[1].1, [(JobState::Completed, 2)]);
        assert!(listed[1].0.open);
        assert_eq!(listed[1].0.callback, Some(JobId(empty)));
        assert!(listed[2].1.is_empty());
        assert!(workflow_list_from_rows(&[]).unwrap().is_empty());
    }

    /// A driver on the local stand-in server (one session), whose requests come back when the
    /// driver is dropped.
    async fn stand_in() -> (
        MsSqlDriver,
        tokio::task::JoinHandle<Vec<crate::wire::Request>>,
    ) {
        let (config, server) = crate::wire::server().await;
        let pool = bb8::Pool::builder()
            .max_size(1)
            .build_unchecked(crate::pool::ConnectionManager::new(config));
        let driver = MsSqlDriver {
            pool,
            schema: "s".into(),
            sql: Statements::new(&[("{schema}", "s")]),
        };
        (driver, server)
    }

    /// A checkout that waits out the pool's connection timeout names that wait (the builder's
    /// connect timeout), not zero; it is unavailable, as a server that does not answer is.
    #[tokio::test]
    async fn an_exhausted_pool_names_its_connection_timeout() {
        let (config, server) = crate::wire::server().await;
        let pool = bb8::Pool::builder()
            .max_size(1)
            .connection_timeout(Duration::from_millis(50))
            .build_unchecked(crate::pool::ConnectionManager::new(config));
        let driver = MsSqlDriver {
            pool,
            schema: "s".into(),
            sql: Statements::new(&[("{schema}", "s")]),
        };
        let held = driver.conn().await.unwrap();
        let err = driver.now().await.unwrap_err();
        assert!(
            matches!(err, MsSqlError::PoolTimedOut(d) if d == Duration::from_millis(50)),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "no connection to SQL Server within 50ms");
        assert_eq!(driver.classify(&err), DriverFault::Unavailable);
        // A transaction's checkout too.
        let err = driver.tx_begin().await.unwrap_err();
        assert_eq!(err.to_string(), "no connection to SQL Server within 50ms");
        drop(held);
        drop(driver);
        server.await.unwrap();
    }

    /// The statements and values of the RPC requests, after the session's own batches.
    fn rpcs(requests: &[crate::wire::Request]) -> Vec<(String, Vec<crate::wire::Sent>)> {
        requests
            .iter()
            .filter_map(|r| match r {
                crate::wire::Request::Rpc(sql, params) => Some((sql.clone(), params.clone())),
                crate::wire::Request::Batch(_) => None,
            })
            .collect()
    }

    /// A workflow's rows go out on the caller's transaction, in chunks of `WORKFLOW_ROWS`,
    /// every value bound; nothing is sent for an empty list.
    #[tokio::test]
    async fn a_workflows_rows_are_inserted_in_the_callers_transaction() {
        let (driver, server) = stand_in().await;
        let id = WorkflowId::new();
        let jobs: Vec<JobId> = (0..WORKFLOW_ROWS + 1).map(|_| JobId::new()).collect();
        let steps: Vec<(JobId, &str)> = jobs.iter().map(|j| (*j, "step")).collect();
        let edges: Vec<WorkflowEdge> = jobs
            .windows(2)
            .map(|w| WorkflowEdge {
                job: w[1],
                dep: w[0],
                policy: DepPolicy::Completed,
            })
            .collect();
        let mut tx = driver.tx_begin().await.unwrap();
        let conn = MsSqlDriver::tx_conn(&mut tx);
        driver
            .workflow_insert(
                conn,
                WorkflowInsert {
                    id,
                    name: Some("w"),
                    open: false,
                    callback: None,
                },
            )
            .await
            .unwrap();
        driver
            .workflow_steps_insert(conn, id, &steps)
            .await
            .unwrap();
        driver.workflow_steps_insert(conn, id, &[]).await.unwrap();
        driver.workflow_deps_insert(conn, &edges).await.unwrap();
        driver.workflow_deps_insert(conn, &[]).await.unwrap();
        driver.workflow_lock(conn, id).await.unwrap();
        driver.tx_commit(tx).await.unwrap();
        let statements = (
            driver.sql.workflow_insert.to_string(),
            driver.sql.workflow_steps_insert_for(WORKFLOW_ROWS),
            driver.sql.workflow_steps_insert_for(1),
            driver.sql.workflow_deps_insert_for(WORKFLOW_ROWS),
            driver.sql.workflow_lock.to_string(),
        );
        drop(driver);
        let requests = server.await.unwrap();
        let begin = crate::wire::Request::Batch("BEGIN TRANSACTION".into());
        let from = requests.iter().position(|r| *r == begin).unwrap();
        assert!(rpcs(&requests[..from]).is_empty());
        let sent = rpcs(&requests[from..]);
        let texts: Vec<&str> = sent.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            texts,
            [
                statements.0.as_str(),
                statements.1.as_str(),
                statements.2.as_str(),
                statements.3.as_str(),
                statements.4.as_str(),
            ]
        );
        let counts: Vec<usize> = sent.iter().map(|(_, p)| p.len()).collect();
        assert_eq!(
            counts,
            [4, 1 + 2 * WORKFLOW_ROWS, 1 + 2, 3 * WORKFLOW_ROWS, 1]
        );
        // The last step's chunk: the workflow, its job and its name.
        let last = &sent[2].1;
        assert_eq!(last[0].value.as_deref(), Some(id.0.as_bytes().as_slice()));
        assert_eq!(
            last[1].value.as_deref(),
            Some(jobs[WORKFLOW_ROWS].0.as_bytes().as_slice())
        );
        // The policy as an int.
        assert_eq!(sent[3].1[2].declared, "int");
        assert!(matches!(
            requests.last(),
            Some(crate::wire::Request::Batch(c)) if c.starts_with("COMMIT")
        ));
    }

    /// Settling goes out in statements of at most 1,000 ids (`BULK_IDS`), each id bound as
    /// the jobs table stores it; an empty list sends nothing.
    #[tokio::test]
    async fn settling_binds_its_ids_in_chunks() {
        let (driver, server) = stand_in().await;
        let ids: Vec<JobId> = (0..BULK_IDS + 1).map(|_| JobId::new()).collect();
        // The stand-in returns no rows: nothing waits, nothing changes.
        assert!(driver
            .workflow_dependents(Target::Pool, &ids)
            .await
            .unwrap()
            .is_empty());
        assert!(driver
            .workflow_block(Target::Pool, &ids[..2])
            .await
            .unwrap()
            .is_empty());
        assert!(driver
            .workflow_promote(Target::Pool, &ids[..1])
            .await
            .unwrap()
            .is_empty());
        // A retry reopens inside its transaction.
        let mut tx = driver.tx_begin().await.unwrap();
        assert!(driver
            .workflow_reopen(&mut tx, &ids[..3])
            .await
            .unwrap()
            .is_empty());
        assert!(driver
            .workflow_reopen(&mut tx, &[])
            .await
            .unwrap()
            .is_empty());
        driver.tx_rollback(tx).await.unwrap();
        for empty in [
            driver.workflow_dependents(Target::Pool, &[]).await.unwrap(),
            driver.workflow_block(Target::Pool, &[]).await.unwrap(),
        ] {
            assert!(empty.is_empty());
        }
        assert!(driver
            .workflow_promote(Target::Pool, &[])
            .await
            .unwrap()
            .is_empty());
        let statements = [
            driver.sql.workflow_dependents_for(BULK_IDS),
            driver.sql.workflow_dependents_for(1),
            driver.sql.workflow_block_for(2),
            driver.sql.workflow_promote_for(1),
            driver.sql.workflow_reopen_for(3),
        ];
        drop(driver);
        let sent = rpcs(&server.await.unwrap());
        let texts: Vec<&str> = sent.iter().map(|(s, _)| s.as_str()).collect();
        let want: Vec<&str> = statements.iter().map(String::as_str).collect();
        assert_eq!(texts, want);
        let counts: Vec<usize> = sent.iter().map(|(_, p)| p.len()).collect();
        assert_eq!(counts, [BULK_IDS, 1, 2, 1, 3]);
        assert_eq!(
            sent[1].1[0].value.as_deref(),
            Some(ids[BULK_IDS].0.as_bytes().as_slice())
        );
        for (_, params) in &sent {
            for p in params {
                assert_eq!(p.value.as_ref().map(Vec::len), Some(16), "{p:?}");
            }
        }
    }

    /// Retention's deletion of whole workflows goes out in the transaction it is given: the
    /// page of workflows it locks (the age as seconds and microseconds, the cursor before every
    /// workflow, the limit as a `bigint`), then one request over their ids (each state's age as
    /// seconds and microseconds, both NULL for a state that is kept; each id bound as stored).
    /// A request that returns no count (as the stand-in answers) is an error.
    #[tokio::test]
    async fn a_workflow_prune_runs_in_the_transaction_it_is_given() {
        let (driver, server) = stand_in().await;
        let hour = Duration::from_secs(3600);
        let mut tx = driver.tx_begin().await.unwrap();
        let page = driver
            .workflow_prune_lock(
                &mut tx,
                WorkflowPruneLock {
                    older_than: hour,
                    after: None,
                    limit: 500,
                },
            )
            .await
            .unwrap();
        assert!(page.is_empty());
        let ids = [WorkflowId::new(), WorkflowId(Uuid::max())];
        let e = driver
            .workflow_prune(
                &mut tx,
                WorkflowPrune {
                    ids: &ids,
                    completed: Some(hour),
                    dead: None,
                    cancelled: Some(Duration::from_micros(5_400_000_001)),
                },
            )
            .await
            .unwrap_err();
        assert!(matches!(e, MsSqlError::Decode(_)), "{e:?}");
        driver.tx_rollback(tx).await.unwrap();
        let lock = driver.sql.workflow_prune_lock.to_string();
        let prune = driver.sql.workflow_prune_for(2);
        drop(driver);
        let requests = server.await.unwrap();
        let begin = crate::wire::Request::Batch("BEGIN TRANSACTION".into());
        let from = requests.iter().position(|r| *r == begin).unwrap();
        assert!(rpcs(&requests[..from]).is_empty());
        let sent = rpcs(&requests[from + 1..]);
        assert_eq!(sent.len(), 2, "{requests:?}");
        assert_eq!(sent[0].0, lock);
        let p = &sent[0].1;
        assert_eq!(p.len(), 5);
        assert_eq!(p[0].value.as_deref(), Some(&3600i32.to_le_bytes()[..]));
        assert_eq!(p[1].value.as_deref(), Some(&0i32.to_le_bytes()[..]));
        assert_eq!(p[2].declared, "datetime2");
        assert_eq!(p[3].value.as_deref(), Some(&[0u8; 16][..]));
        assert_eq!(p[4].declared, "bigint");
        assert_eq!(p[4].value.as_deref(), Some(&500i64.to_le_bytes()[..]));
        assert_eq!(sent[1].0, prune);
        let p = &sent[1].1;
        assert_eq!(p.len(), 8);
        assert_eq!(p[0].value.as_deref(), Some(&3600i32.to_le_bytes()[..]));
        assert_eq!(p[1].value.as_deref(), Some(&0i32.to_le_bytes()[..]));
        assert!(p[2].value.is_none() && p[3].value.is_none(), "{p:?}");
        assert_eq!(p[2].declared, "int");
        assert_eq!(p[4].value.as_deref(), Some(&5400i32.to_le_bytes()[..]));
        assert_eq!(p[5].value.as_deref(), Some(&1i32.to_le_bytes()[..]));
        assert_eq!(p[6].value.as_deref(), Some(ids[0].0.as_bytes().as_slice()));
        assert_eq!(p[7].value.as_deref(), Some(&[0xffu8; 16][..]));
        assert!(matches!(
            requests.last(),
            Some(crate::wire::Request::Batch(c)) if c.contains("ROLLBACK")
        ));
    }
}
