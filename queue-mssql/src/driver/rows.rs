//! Decoding the dialect's rows and building the values its statements bind.

use std::time::Duration;

use chrono::{DateTime, Utc};
use queue_core::engine::{
    micros, rate_limit_of, JobClaim, JobInsert, JobInsertUnique, JobMatch, JobPrune, JobReschedule,
    JobUniqueReplace, RateState, StoredSchedule, StoredWorkflow, UniqueInsert, WorkflowEdge,
    WorkflowInsert, WorkflowPrune, WorkflowPruneLock,
};
use queue_core::{
    DepPolicy, Dependency, Job, JobId, JobState, Leased, ListRequest, QueueControl, QueueStats,
    WorkflowId,
};
use serde_json::value::RawValue;
use tiberius::Row;
use uuid::Uuid;

use crate::bind::{params, Params};
use crate::error::MsSqlError;
use crate::sql::{dateadd_parts, INSERT_VALUES, MAX_ROWS_PER_STATEMENT};

pub(super) fn decode(what: impl Into<String>) -> MsSqlError {
    MsSqlError::Decode(what.into())
}

pub(super) fn bytes<'r>(row: &'r Row, col: &str) -> Result<Option<&'r [u8]>, MsSqlError> {
    Ok(row.try_get::<&[u8], _>(col)?)
}

pub(super) fn uuid_of(row: &Row, col: &str) -> Result<Uuid, MsSqlError> {
    opt_uuid(row, col)?.ok_or_else(|| decode(format!("{col} is NULL")))
}

/// An id column that may be NULL (`workflow_id`, `blocked_by`, `callback`).
pub(super) fn opt_uuid(row: &Row, col: &str) -> Result<Option<Uuid>, MsSqlError> {
    bytes(row, col)?
        .map(|b| {
            Uuid::from_slice(b).map_err(|_| decode(format!("{col} has {} bytes, not 16", b.len())))
        })
        .transpose()
}

pub(super) fn opt_text(row: &Row, col: &str) -> Result<Option<String>, MsSqlError> {
    Ok(row.try_get::<&str, _>(col)?.map(str::to_owned))
}

pub(super) fn text(row: &Row, col: &str) -> Result<String, MsSqlError> {
    opt_text(row, col)?.ok_or_else(|| decode(format!("{col} is NULL")))
}

pub(super) fn int(row: &Row, col: &str) -> Result<i32, MsSqlError> {
    row.try_get::<i32, _>(col)?
        .ok_or_else(|| decode(format!("{col} is NULL")))
}

pub(super) fn count(row: &Row, col: &str) -> Result<u64, MsSqlError> {
    Ok(row
        .try_get::<i64, _>(col)?
        .map_or(0, |n| u64::try_from(n).unwrap_or(0)))
}

pub(super) fn unsigned(row: &Row, col: &str) -> Result<u32, MsSqlError> {
    Ok(u32::try_from(int(row, col)?).unwrap_or(0))
}

pub(super) fn opt_time(row: &Row, col: &str) -> Result<Option<DateTime<Utc>>, MsSqlError> {
    Ok(row.try_get::<DateTime<Utc>, _>(col)?)
}

pub(super) fn time(row: &Row, col: &str) -> Result<DateTime<Utc>, MsSqlError> {
    opt_time(row, col)?.ok_or_else(|| decode(format!("{col} is NULL")))
}

pub(super) fn parse_state(s: &str) -> Result<JobState, MsSqlError> {
    s.parse()
        .map_err(|_| decode(format!("unknown job state {s:?} in the jobs table")))
}

/// A dedup key as stored: its UTF-8 bytes.
pub(super) fn dedup_key(row: &Row) -> Result<Option<String>, MsSqlError> {
    bytes(row, "dedup_key")?
        .map(|b| String::from_utf8(b.to_vec()).map_err(|_| decode("a dedup key is not UTF-8")))
        .transpose()
}

/// A concurrency key as stored (`concurrency_key`, `key_cursor`, `next_key`): its UTF-8 bytes.
pub(super) fn key_column(row: &Row, col: &str) -> Result<Option<String>, MsSqlError> {
    bytes(row, col)?
        .map(|b| {
            String::from_utf8(b.to_vec())
                .map_err(|_| decode(format!("a concurrency key ({col}) is not UTF-8")))
        })
        .transpose()
}

/// JSON text of an optional column, checked.
pub(super) fn json_column(row: &Row, col: &str) -> Result<Option<Box<RawValue>>, MsSqlError> {
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
pub(super) fn schedule_from_row(row: &Row) -> Result<StoredSchedule, MsSqlError> {
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
pub(super) fn control(row: &Row) -> Result<QueueControl, MsSqlError> {
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
pub(super) fn rate_state(row: &Row) -> Result<RateState, MsSqlError> {
    Ok(RateState {
        window: row.try_get::<i64, _>("rate_window")?,
        count: unsigned(row, "rate_count")?,
        now_us: row
            .try_get::<i64, _>("now_us")?
            .ok_or_else(|| decode("now_us is NULL"))?,
    })
}

/// The 15 values `schedule_insert` and `schedule_update` bind first (`@P1..@P15`).
pub(super) fn schedule_values(s: &StoredSchedule) -> Params<'_> {
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
pub(super) fn schedule_insert_values(s: &StoredSchedule) -> Params<'_> {
    let mut params = schedule_values(s);
    params.push(s.created_at);
    params.push(s.updated_at);
    params.push(s.kind.as_deref());
    params
}

/// The values of `schedule_update`: [`schedule_values`], then the change time, the version
/// the row must still have, and the kind.
pub(super) fn schedule_update_values(s: &StoredSchedule, version: i64) -> Params<'_> {
    let mut params = schedule_values(s);
    params.push(s.updated_at);
    params.push(version);
    params.push(s.kind.as_deref());
    params
}

/// The values of `queue_set_limit` and `queue_set_key_limit`: the queue and its limit (`int`;
/// NULL: none).
pub(super) fn set_limit_values(queue: &str, limit: Option<u32>) -> Params<'_> {
    params![queue, limit.map(signed)]
}

/// The values of `queue_set_rate` and `queue_set_key_rate`: the queue, its starts per window
/// (`int`) and the window in microseconds (`bigint`), both NULL to remove the limit.
pub(super) fn set_rate_values(queue: &str, rate: Option<(u32, i64)>) -> Params<'_> {
    params![queue, rate.map(|(n, _)| signed(n)), rate.map(|(_, us)| us)]
}

/// The values of `queue_rate_record`: the queue, the window (`bigint`) and its count (`int`).
pub(super) fn rate_record_values(queue: &str, window: i64, count: u32) -> Params<'_> {
    params![queue, window, signed(count)]
}

/// The values of `queue_key_rate_put`: the queue, the key as its UTF-8 bytes (`varbinary`),
/// the window (`bigint`) and its count (`int`).
pub(super) fn key_rate_put_values<'a>(
    queue: &'a str,
    key: &'a str,
    window: i64,
    count: u32,
) -> Params<'a> {
    params![queue, key.as_bytes(), window, signed(count)]
}

/// The values of `queue_key_rate_prune`: the queue, the first window kept (`bigint`) and the
/// most rows (`int`).
pub(super) fn key_rate_prune_values(queue: &str, before: i64, step: usize) -> Params<'_> {
    params![queue, before, limit(step)]
}

/// The row of `queue_key_rate_get`: the window of a key's count and that count.
pub(super) fn key_rate(row: &Row) -> Result<(i64, u32), MsSqlError> {
    let window = row
        .try_get::<i64, _>("rate_window")?
        .ok_or_else(|| decode("rate_window is NULL"))?;
    Ok((window, unsigned(row, "rate_count")?))
}

/// The values of `queue_key_cursor`: the queue and the key served last, as its UTF-8 bytes
/// (`varbinary`; NULL: the jobs without a key).
pub(super) fn key_cursor_values<'a>(queue: &'a str, cursor: Option<&'a str>) -> Params<'a> {
    params![queue, cursor.map(str::as_bytes)]
}

/// The values of `job_key_waiting`: the queue and a key as its UTF-8 bytes.
pub(super) fn key_values<'a>(queue: &'a str, key: &'a str) -> Params<'a> {
    params![queue, key.as_bytes()]
}

/// The values of `job_key_next`: [`key_values`], then how many keys.
pub(super) fn key_next_values<'a>(queue: &'a str, after: &'a str, n: usize) -> Params<'a> {
    params![
        queue,
        after.as_bytes(),
        i64::try_from(n).unwrap_or(i64::MAX)
    ]
}

/// The rows of `job_key_leases`: each key with its live leases.
pub(super) fn key_leases(rows: &[Row]) -> Result<Vec<(String, u64)>, MsSqlError> {
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
pub(super) fn claim_key_values<'a>(p: JobClaim<'a>, key: Option<&'a str>) -> Params<'a> {
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
pub(super) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(super) fn signed(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The values of `job_claim`, in its order (`@P1..@P6`).
pub(super) fn claim_values(p: JobClaim<'_>) -> Params<'_> {
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
pub(super) fn insert_values<'a>(p: &JobInsert<'a>, start: usize, end: usize) -> Params<'a> {
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
pub(super) fn unique_insert_values<'a>(p: &JobInsertUnique<'a>) -> Params<'a> {
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
pub(super) fn unique_insert_outcome(rows: &[Row]) -> Result<UniqueInsert, MsSqlError> {
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
pub(super) fn unique_replace_values<'a>(p: &JobUniqueReplace<'a>) -> Params<'a> {
    let (secs, us) = dateadd_parts(p.delay);
    params![p.id, p.job.payload_json(), p.job.priority_value(), secs, us]
}

/// The values of `job_list` (`@P1..@P5`): each filter NULL when not set.
pub(super) fn list_values(req: &ListRequest) -> Params<'_> {
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
pub(super) fn reschedule_values<'a>(p: JobReschedule) -> Params<'a> {
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
pub(super) fn prune_values<'a>(p: &JobPrune<'a>, step: usize) -> Params<'a> {
    let (secs, us) = dateadd_parts(p.older_than);
    let mut params = params![secs, us, p.queue, limit(step)];
    params.extend(p.states.iter().map(|s| s.as_str()));
    params
}

/// The values of `workflow_prune_lock`: the age as whole seconds plus microseconds, the
/// cursor (before every workflow for the first page: the Unix epoch and the least id), the
/// limit.
pub(super) fn prune_lock_values<'a>(p: WorkflowPruneLock) -> Params<'a> {
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
pub(super) fn workflow_prune_values<'a>(p: &WorkflowPrune<'_>, ids: &[WorkflowId]) -> Params<'a> {
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
pub(super) fn match_values<'a>(m: &JobMatch<'a>) -> Params<'a> {
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
pub(super) fn ids_values<'a>(m: &JobMatch<'a>) -> Params<'a> {
    let mut params = match_values(m);
    params.push(m.before);
    params.push(limit(m.limit));
    params.extend(m.states.iter().map(|s| s.as_str()));
    params
}

/// The values of `job_count`: [`match_values`], then the states.
pub(super) fn count_values<'a>(m: &JobMatch<'a>) -> Params<'a> {
    let mut params = match_values(m);
    params.extend(m.states.iter().map(|s| s.as_str()));
    params
}

/// The values of a statement over a list of ids (`{ids}` from `@P1`), then `states`.
pub(super) fn id_values<'a>(ids: &[JobId], states: &[JobState]) -> Params<'a> {
    let mut params = Params::with_capacity(ids.len() + states.len());
    params.extend(ids.iter().copied());
    params.extend(states.iter().map(|s| s.as_str()));
    params
}

/// The cap of `job_stats` as `TOP (@P2)` takes it: a BIGINT that is never NULL, the largest
/// one for no cap.
pub(super) fn stats_cap(cap: Option<u64>) -> i64 {
    cap.map_or(i64::MAX, |c| i64::try_from(c).unwrap_or(i64::MAX))
}

/// A row of `job_stats`.
pub(super) fn stats_from_row(r: &Row) -> Result<QueueStats, MsSqlError> {
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
pub(super) fn workflow_from_row(row: &Row) -> Result<StoredWorkflow, MsSqlError> {
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
pub(super) fn workflow_insert_values<'a>(w: &WorkflowInsert<'a>) -> Params<'a> {
    params![w.id, w.name, w.open, w.callback]
}

/// The values of one `workflow_steps_insert`: the workflow, then each job and its step name.
pub(super) fn steps_values<'a>(workflow: WorkflowId, steps: &[(JobId, &'a str)]) -> Params<'a> {
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
pub(super) fn edges_values<'a>(edges: &[WorkflowEdge]) -> Params<'a> {
    let mut params = Params::with_capacity(3 * edges.len());
    for e in edges {
        params.push(e.dep);
        params.push(e.job);
        params.push(i32::from(e.policy.code()));
    }
    params
}

/// A stored dependency policy (SMALLINT).
pub(super) fn policy(row: &Row) -> Result<DepPolicy, MsSqlError> {
    row.try_get::<i16, _>("policy")?
        .map(|code| DepPolicy::from_code(i64::from(code)))
        .ok_or_else(|| decode("policy is NULL"))
}

/// A row of `workflow_edges`.
pub(super) fn edge_from_row(row: &Row) -> Result<WorkflowEdge, MsSqlError> {
    Ok(WorkflowEdge {
        job: JobId(uuid_of(row, "job_id")?),
        dep: JobId(uuid_of(row, "dep_id")?),
        policy: policy(row)?,
    })
}

/// A row of `job_deps`: the dependency's job, its step, the policy, and what the job is now
/// (no state: deleted).
pub(super) fn dependency_from_row(row: &Row) -> Result<Dependency, MsSqlError> {
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
pub(super) fn workflow_job_from_row(row: &Row) -> Result<Job, MsSqlError> {
    let (mut job, _) = job_from_row(row)?;
    job.step = Some(text(row, "step")?);
    Ok(job)
}

/// The rows of `workflow_list` (one per workflow and state, newest workflow first) as
/// workflows with their counts per state, in lifecycle order; the row of a workflow's deleted
/// jobs (no state, a count of 0) counts nothing.
/// A workflow as `workflow_list` returns it: its row and how many of its jobs are in each state.
pub(super) type Listed = (StoredWorkflow, Vec<(JobState, u64)>);

pub(super) fn workflow_list_from_rows(rows: &[Row]) -> Result<Vec<Listed>, MsSqlError> {
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
pub(super) fn job_ids(rows: &[Row], col: &str) -> Result<Vec<JobId>, MsSqlError> {
    rows.iter().map(|r| Ok(JobId(uuid_of(r, col)?))).collect()
}

/// `(start, end)` of each chunk of `n` items, `size` at most.
pub(crate) fn chunks(n: usize, size: usize) -> Vec<(usize, usize)> {
    (0..n)
        .step_by(size.max(1))
        .map(|start| (start, (start + size.max(1)).min(n)))
        .collect()
}
