//! [`SqliteDriver`]: the SQLite statements behind the engine.
//!
//! Every write goes through one connection (SQLite admits one writer at a time, so more writer
//! connections would only queue on the file lock); reads use a separate read-only pool and never
//! block the writer, thanks to WAL. Transactions of more than one statement start with
//! `BEGIN IMMEDIATE`, which takes the write lock before reading, so a transaction never has to
//! upgrade a read lock (the upgrade is what can fail with `SQLITE_BUSY` without waiting).
//! A single writing statement runs in autocommit mode, where SQLite takes the write lock at the
//! start of the statement in the same way, so it needs no explicit transaction.
//!
//! Time: SQLite has no clock of its own, so "the database clock" is this host's clock, read in
//! Rust at microsecond precision and bound into each statement as INTEGER microseconds since
//! the Unix epoch (UTC).

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    micros, rate_limit_of, Driver, DriverFault, Expired, JobClaim, JobComplete, JobFailDead,
    JobFailRetry, JobInsert, JobInsertUnique, JobMatch, JobMetaSet, JobPrune, JobReschedule,
    JobRescue, JobSnooze, JobUniqueReplace, Migration, RateState, ScheduleAdvance, StoredMeta,
    StoredSchedule, StoredWorkflow, Target, UniqueInsert, WorkflowEdge, WorkflowInsert,
    WorkflowPrune, WorkflowPruneLock, WorkflowPruned,
};
use queue_core::{
    DepPolicy, Dependency, Job, JobId, JobState, Lease, Leased, ListRequest, QueueControl,
    QueueStats, WorkflowId,
};
use serde_json::value::RawValue;
use sqlx::sqlite::{SqliteConnection, SqlitePool, SqliteRow};
use sqlx::{Acquire, AssertSqlSafe, Row, SqlSafeStr, SqlStr, Sqlite, Transaction};
use uuid::Uuid;

use crate::migrate::MIGRATIONS;
use crate::sql::Statements;

/// SQLite's default limit on bound parameters in one statement (`SQLITE_MAX_VARIABLE_NUMBER`
/// since 3.32); multi-row statements are chunked to stay under it.
const MAX_PARAMS: usize = 32_766;
/// Values bound per row of `job_insert`.
const INSERT_PARAMS: usize = 15;
/// Rows per `job_insert` statement.
const INSERT_ROWS: usize = MAX_PARAMS / INSERT_PARAMS;
/// Leases per `job_complete_many` / `job_rescue` statement (two values each, plus five).
const PAIRS: usize = (MAX_PARAMS - 5) / 2;

/// The SQLite driver behind [`crate::SqliteQueue`]: the writer connection, the read pool, and
/// the statements. Reached through [`queue_core::Backend::engine`].
#[derive(Debug)]
pub struct SqliteDriver {
    pub(crate) writer: SqlitePool,
    pub(crate) reader: SqlitePool,
    pub(crate) sql: Statements,
    /// Single pushes outside a transaction, written together when they arrive together.
    pub(crate) pushes: std::sync::Arc<crate::coalesce::Coalescer>,
}

/// The host clock in microseconds since the Unix epoch: SQLite's "database clock".
pub(crate) fn now_micros() -> i64 {
    Utc::now().timestamp_micros()
}

/// `now` (microseconds) as the RFC 3339 text an error history entry carries.
fn rfc3339(now: i64) -> String {
    DateTime::from_timestamp_micros(now)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// JSON text of a column, checked.
fn json_column(text: Option<String>, column: &str) -> Result<Option<Box<RawValue>>, sqlx::Error> {
    text.map(|t| {
        RawValue::from_string(t).map_err(|e| decode(format!("stored {column} is not JSON: {e}")))
    })
    .transpose()
}

fn decode(what: String) -> sqlx::Error {
    sqlx::Error::Decode(what.into())
}

fn to_time(us: i64) -> Result<DateTime<Utc>, sqlx::Error> {
    DateTime::from_timestamp_micros(us)
        .ok_or_else(|| decode(format!("timestamp out of range: {us} µs")))
}

fn to_time_opt(us: Option<i64>) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    us.map(to_time).transpose()
}

fn to_u32(v: i64, column: &str) -> Result<u32, sqlx::Error> {
    u32::try_from(v).map_err(|_| decode(format!("{column} out of range: {v}")))
}

fn parse_state(s: &str) -> Result<JobState, sqlx::Error> {
    s.parse()
        .map_err(|_| decode(format!("unknown job state {s:?}")))
}

fn json_array(items: &[&str]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".to_owned())
}

/// A schedule row (`schedule_get`, `schedule_list`).
fn schedule_from_row(row: &SqliteRow) -> Result<StoredSchedule, sqlx::Error> {
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
fn bind_schedule<'q>(
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
fn job_from_row(row: &SqliteRow) -> Result<(Job, Option<Uuid>), sqlx::Error> {
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
fn job_detail_from_row(row: &SqliteRow) -> Result<Job, sqlx::Error> {
    let (mut job, _) = job_from_row(row)?;
    if let Some(errors) = row.try_get::<Option<String>, _>("errors")? {
        job.errors = queue_core::job::parse_errors(&errors).map_err(decode)?;
    }
    job.output = json_column(row.try_get("output")?, "output")?;
    job.step = row.try_get("step")?;
    Ok(job)
}

/// A claimed row as a [`Leased`].
fn leased_from_row(row: &SqliteRow) -> Result<Leased, sqlx::Error> {
    let (job, token) = job_from_row(row)?;
    let token =
        token.ok_or_else(|| decode(format!("claimed job {} has no lease token", job.id)))?;
    Leased::from_claimed(job, token).map_err(|e| decode(e.to_string()))
}

/// Splits a statement whose last part is `VALUES\n(tuple)[\n...]` and repeats the tuple `rows`
/// times, for a multi-row statement. Only placeholders are repeated; values are bound.
fn repeat_tuple(statement: &str, rows: usize) -> String {
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
fn rows_of(statement: &SqlStr, rows: usize) -> SqlStr {
    if rows == 1 {
        statement.clone()
    } else {
        AssertSqlSafe(repeat_tuple(statement.as_str(), rows)).into_sql_str()
    }
}

/// Inserts `jobs` with one multi-row `INSERT` (the caller keeps them under the parameter limit).
pub(crate) async fn insert_rows(
    job_insert: &SqlStr,
    conn: &mut SqliteConnection,
    jobs: &[queue_core::NewJob],
    delays: &[Duration],
    now: i64,
) -> Result<(), sqlx::Error> {
    let statement = rows_of(job_insert, jobs.len());
    let mut q = sqlx::query(statement);
    for (job, delay) in jobs.iter().zip(delays) {
        q = q
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(i64::from(job.max_attempts_value()))
            .bind(now.saturating_add(micros(*delay)))
            .bind(job.dedup_key_value())
            .bind(job.kind_value())
            .bind(job.meta_json())
            .bind(job.timeout_value().map(micros))
            .bind(now)
            .bind(now)
            .bind(job.concurrency_key_value())
            .bind(job.initial_state().as_str())
            .bind(job.workflow_id().map(|w| w.0));
    }
    q.execute(conn).await?;
    Ok(())
}

async fn insert_chunks(
    sql: &Statements,
    conn: &mut SqliteConnection,
    p: JobInsert<'_>,
) -> Result<(), sqlx::Error> {
    let now = now_micros();
    for (jobs, delays) in p.jobs.chunks(INSERT_ROWS).zip(p.delays.chunks(INSERT_ROWS)) {
        insert_rows(&sql.job_insert, conn, jobs, delays, now).await?;
    }
    Ok(())
}

impl SqliteDriver {
    /// `job_claim` with its values bound.
    fn claim_query(
        &self,
        p: JobClaim<'_>,
    ) -> sqlx::query::Query<'_, Sqlite, sqlx::sqlite::SqliteArguments> {
        sqlx::query(self.sql.job_claim.clone())
            .bind(p.queue)
            .bind(now_micros())
            .bind(micros(p.lease))
            .bind(p.worker)
            .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
            .bind(p.controls_checked)
    }

    async fn begin(&self) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
        self.writer.begin_with("BEGIN IMMEDIATE").await
    }

    /// A statement over `(id, token)` pairs, chunked under the parameter limit: binds `fixed`,
    /// then `text`, then `after` (each once per statement), then the pairs.
    /// A statement over a list of ids (the `(?)` tuple after its VALUES repeated per id, in
    /// chunks under the parameter limit), after an optional integer and text value; rows
    /// changed.
    async fn by_ids(
        &self,
        statement: &SqlStr,
        first: Option<i64>,
        text: Option<&str>,
        ids: &[JobId],
    ) -> Result<u64, sqlx::Error> {
        let mut done = 0;
        for chunk in ids.chunks(MAX_PARAMS - 2) {
            let mut q = sqlx::query(rows_of(statement, chunk.len()));
            if let Some(v) = first {
                q = q.bind(v);
            }
            if let Some(t) = text {
                q = q.bind(t);
            }
            for id in chunk {
                q = q.bind(id.0);
            }
            done += q.execute(&self.writer).await?.rows_affected();
        }
        Ok(done)
    }

    /// A writing statement over a list of ids (after `now`) that returns `id` (and `queue`,
    /// when it has one), in chunks under the parameter limit, where `target` says.
    async fn ids_returning(
        &self,
        statement: &SqlStr,
        mut target: Target<'_, SqliteConnection>,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, Option<String>)>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_PARAMS - 2) {
            let mut q = sqlx::query(rows_of(statement, chunk.len())).bind(now_micros());
            for id in chunk {
                q = q.bind(id.0);
            }
            let rows = match target.reborrow() {
                Target::Pool => q.fetch_all(&self.writer).await?,
                Target::Tx(conn) => q.fetch_all(conn).await?,
            };
            for row in &rows {
                let queue = if row.columns().len() > 1 {
                    Some(row.try_get("queue")?)
                } else {
                    None
                };
                out.push((JobId(row.try_get("id")?), queue));
            }
        }
        Ok(out)
    }

    async fn pairs(
        &self,
        statement: &SqlStr,
        fixed: &[i64],
        text: &[&str],
        after: &[i64],
        pairs: impl Iterator<Item = (Uuid, Uuid)>,
    ) -> Result<u64, sqlx::Error> {
        let pairs: Vec<(Uuid, Uuid)> = pairs.collect();
        let mut done = 0;
        for chunk in pairs.chunks(PAIRS) {
            let mut q = sqlx::query(rows_of(statement, chunk.len()));
            for v in fixed {
                q = q.bind(*v);
            }
            for t in text {
                q = q.bind(*t);
            }
            for v in after {
                q = q.bind(*v);
            }
            for (id, token) in chunk {
                q = q.bind(*id).bind(*token);
            }
            done += q.execute(&self.writer).await?.rows_affected();
        }
        Ok(done)
    }
}

/// A row of `workflow_get`, `workflow_lock` or `workflow_list`.
fn workflow_from_row(row: &SqliteRow) -> Result<StoredWorkflow, sqlx::Error> {
    Ok(StoredWorkflow {
        id: WorkflowId(row.try_get("id")?),
        name: row.try_get("name")?,
        open: row.try_get("open")?,
        callback: row.try_get::<Option<Uuid>, _>("callback")?.map(JobId),
        created_at: to_time(row.try_get("created_at")?)?,
    })
}

/// The creation time below which a job is older than `age` (`None`: any age).
fn created_before(age: Option<Duration>) -> Option<i64> {
    age.map(|a| now_micros().saturating_sub(micros(a)))
}

/// A row of `queue_control_*`.
fn control(row: &SqliteRow) -> Result<QueueControl, sqlx::Error> {
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

#[async_trait]
impl Driver for SqliteDriver {
    type Conn = SqliteConnection;
    type Error = sqlx::Error;
    type Candidate = (Uuid, i64);
    type Migrator = Transaction<'static, Sqlite>;

    fn classify(&self, error: &sqlx::Error) -> DriverFault {
        crate::error::classify(error)
    }

    fn migrations(&self) -> &'static [Migration] {
        MIGRATIONS
    }

    /// `BEGIN IMMEDIATE` takes the database's write lock before anything is read, so when two
    /// processes migrate the same file at once the second waits (up to the busy timeout), then
    /// sees the versions recorded by the first.
    async fn migration_lock(&self) -> Result<Self::Migrator, sqlx::Error> {
        let mut tx = self.begin().await?;
        sqlx::query(self.sql.migration_table.clone())
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    async fn migration_applied(&self, m: &mut Self::Migrator) -> Result<Vec<i64>, sqlx::Error> {
        sqlx::query_scalar(self.sql.migration_applied.clone())
            .fetch_all(&mut **m)
            .await
    }

    async fn migration_apply(
        &self,
        m: &mut Self::Migrator,
        migration: &Migration,
    ) -> Result<(), sqlx::Error> {
        // SQLite runs every statement of a multi-statement string in order.
        sqlx::raw_sql(migration.sql).execute(&mut **m).await?;
        sqlx::query(self.sql.migration_record.clone())
            .bind(migration.version)
            .bind(migration.name)
            .bind(now_micros())
            .execute(&mut **m)
            .await?;
        Ok(())
    }

    async fn migration_unlock(&self, m: Self::Migrator, commit: bool) -> Result<(), sqlx::Error> {
        if commit {
            m.commit().await
        } else {
            m.rollback().await
        }
    }

    async fn now(&self) -> Result<DateTime<Utc>, sqlx::Error> {
        to_time(now_micros())
    }

    async fn job_insert(
        &self,
        target: Target<'_, SqliteConnection>,
        p: JobInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        match target {
            Target::Pool if p.jobs.len() == 1 => {
                self.pushes.push(p.jobs[0].clone(), p.delays[0]).await
            }
            // One statement is atomic by itself; the engine wraps several in a transaction.
            Target::Pool => {
                let mut conn = self.writer.acquire().await?;
                insert_chunks(&self.sql, &mut conn, p).await
            }
            Target::Tx(conn) => insert_chunks(&self.sql, conn, p).await,
        }
    }

    /// One statement per 2,184 jobs (15 values each, under 32,766 parameters).
    fn job_insert_statements(&self, p: JobInsert<'_>) -> usize {
        p.jobs.len().div_ceil(INSERT_ROWS)
    }

    /// The insert and, when it stored nothing, the read of the holder, on one connection (the
    /// writer, or the caller's transaction): no other write runs between them.
    async fn job_insert_unique(
        &self,
        target: Target<'_, SqliteConnection>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert, sqlx::Error> {
        let mut pooled;
        let conn: &mut SqliteConnection = match target {
            Target::Pool => {
                pooled = self.writer.acquire().await?;
                &mut pooled
            }
            Target::Tx(conn) => conn,
        };
        let now = now_micros();
        let job = p.job;
        let inserted: Option<Uuid> = sqlx::query_scalar(self.sql.job_insert_unique.clone())
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(i64::from(job.max_attempts_value()))
            .bind(now.saturating_add(micros(p.delay)))
            .bind(job.dedup_key_value())
            .bind(job.kind_value())
            .bind(job.meta_json())
            .bind(job.timeout_value().map(micros))
            .bind(now)
            .bind(&p.key[..])
            .bind(p.states)
            .bind(job.concurrency_key_value())
            .fetch_optional(&mut *conn)
            .await?;
        if inserted.is_some() {
            return Ok(UniqueInsert::Inserted);
        }
        let holder: Option<Uuid> = sqlx::query_scalar(self.sql.job_insert_unique_holder.clone())
            .bind(&p.key[..])
            .fetch_optional(&mut *conn)
            .await?;
        Ok(holder.map_or(UniqueInsert::Released, |id| UniqueInsert::Held(JobId(id))))
    }

    async fn job_unique_replace(
        &self,
        target: Target<'_, SqliteConnection>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64, sqlx::Error> {
        let now = now_micros();
        let q = sqlx::query(self.sql.job_unique_replace.clone())
            .bind(p.id.0)
            .bind(p.job.payload_json())
            .bind(p.job.priority_value())
            .bind(now.saturating_add(micros(p.delay)))
            .bind(now);
        let done = match target {
            Target::Pool => q.execute(&self.writer).await?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>, sqlx::Error> {
        let holder: Option<Uuid> = sqlx::query_scalar(self.sql.job_unique_holder.clone())
            .bind(id.0)
            .fetch_optional(&self.reader)
            .await?;
        Ok(holder.map(JobId))
    }

    async fn job_dedup_live(
        &self,
        target: Target<'_, SqliteConnection>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>, sqlx::Error> {
        let q = sqlx::query_as(self.sql.job_dedup_live.clone())
            .bind(json_array(queues))
            .bind(json_array(keys));
        match target {
            Target::Pool => q.fetch_all(&self.reader).await,
            Target::Tx(conn) => q.fetch_all(conn).await,
        }
    }

    /// One `UPDATE ... RETURNING` statement. It runs in autocommit mode, which for a single
    /// writing statement is the same as wrapping it in `BEGIN IMMEDIATE`: SQLite opens the
    /// statement's transaction with write intent, taking the write lock (and waiting for it
    /// under the busy timeout) before it reads anything, and commits when the statement
    /// finishes. Skipping the explicit `BEGIN`/`COMMIT` saves two calls per pop.
    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>, sqlx::Error> {
        let rows = self.claim_query(p).fetch_all(&self.writer).await?;
        rows.iter().map(leased_from_row).collect()
    }

    async fn job_claim_in(
        &self,
        conn: &mut SqliteConnection,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let rows = self.claim_query(p).fetch_all(conn).await?;
        rows.iter().map(leased_from_row).collect()
    }

    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<(Uuid, i64)>, sqlx::Error> {
        sqlx::query_as(self.sql.job_candidates.clone())
            .bind(p.queue)
            .bind(now_micros())
            .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await
    }

    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        candidates: Vec<(Uuid, i64)>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let mut claimed = Vec::with_capacity(candidates.len());
        for (id, version) in candidates {
            let row = sqlx::query(self.sql.job_claim_candidates.clone())
                .bind(id)
                .bind(version)
                .bind(Uuid::new_v4())
                .bind(now)
                .bind(micros(p.lease))
                .bind(p.worker)
                .bind(p.queue)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(row) = row {
                claimed.push(leased_from_row(&row)?);
            }
        }
        tx.commit().await?;
        Ok(claimed)
    }

    async fn job_complete(
        &self,
        target: Target<'_, SqliteConnection>,
        p: JobComplete<'_>,
    ) -> Result<u64, sqlx::Error> {
        let update = || {
            sqlx::query(self.sql.job_complete.clone())
                .bind(p.lease.job_id.0)
                .bind(p.lease.token)
                .bind(now_micros())
                .bind(p.output)
        };
        if p.keep || p.output.is_some() {
            let done = match target {
                Target::Pool => update().execute(&self.writer).await?,
                Target::Tx(conn) => update().execute(conn).await?,
            };
            return Ok(done.rows_affected());
        }
        let delete = sqlx::query(self.sql.job_complete_delete.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token);
        match target {
            Target::Pool => {
                let mut tx = self.begin().await?;
                let deleted = delete.execute(&mut *tx).await?.rows_affected();
                let done = update().execute(&mut *tx).await?.rows_affected();
                tx.commit().await?;
                Ok(deleted + done)
            }
            Target::Tx(conn) => {
                let deleted = delete.execute(&mut *conn).await?.rows_affected();
                Ok(deleted + update().execute(conn).await?.rows_affected())
            }
        }
    }

    async fn job_complete_many(&self, leases: &[Lease], keep: bool) -> Result<u64, sqlx::Error> {
        let pairs = leases.iter().map(|l| (l.job_id.0, l.token));
        if keep {
            return self
                .pairs(
                    &self.sql.job_complete_many,
                    &[now_micros()],
                    &[],
                    &[],
                    pairs,
                )
                .await;
        }
        // Deletes what nothing needs, then completes the rest, in one write transaction.
        let pairs: Vec<(Uuid, Uuid)> = pairs.collect();
        let now = now_micros();
        let mut tx = self.begin().await?;
        let mut done = 0;
        for chunk in pairs.chunks(PAIRS) {
            let mut delete = sqlx::query(rows_of(&self.sql.job_complete_many_delete, chunk.len()));
            let mut update =
                sqlx::query(rows_of(&self.sql.job_complete_many, chunk.len())).bind(now);
            for (id, token) in chunk {
                delete = delete.bind(*id).bind(*token);
                update = update.bind(*id).bind(*token);
            }
            done += delete.execute(&mut *tx).await?.rows_affected();
            done += update.execute(&mut *tx).await?.rows_affected();
        }
        tx.commit().await?;
        Ok(done)
    }

    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64, sqlx::Error> {
        let now = now_micros();
        let done = sqlx::query(self.sql.job_fail_retry.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(now)
            .bind(now.saturating_add(micros(p.delay)))
            .bind(p.error)
            .bind(rfc3339(now))
            .bind(i64::from(p.errors_kept))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64, sqlx::Error> {
        let now = now_micros();
        let done = sqlx::query(self.sql.job_fail_dead.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(now)
            .bind(p.error)
            .bind(rfc3339(now))
            .bind(i64::from(p.errors_kept))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64, sqlx::Error> {
        let now = now_micros();
        let done = sqlx::query(self.sql.job_snooze.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(now)
            .bind(now.saturating_add(micros(p.delay)))
            .bind(i64::from(p.max_snoozes))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>, sqlx::Error> {
        let row: Option<(Option<String>, i64)> = sqlx::query_as(self.sql.job_meta_get.clone())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .fetch_optional(&self.writer)
            .await?;
        Ok(row.map(|(meta, version)| StoredMeta { meta, version }))
    }

    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.job_meta_set.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(p.version)
            .bind(p.meta)
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_release(&self, lease: &Lease) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.job_release.clone())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_extend(
        &self,
        lease: &Lease,
        by: Duration,
    ) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
        let expires: Option<i64> = sqlx::query_scalar(self.sql.job_extend.clone())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(now_micros())
            .bind(micros(by))
            .fetch_optional(&self.writer)
            .await?;
        expires.map(to_time).transpose()
    }

    async fn job_state(
        &self,
        target: Target<'_, SqliteConnection>,
        id: JobId,
    ) -> Result<Option<JobState>, sqlx::Error> {
        let q = sqlx::query_scalar::<_, String>(self.sql.job_state.clone()).bind(id.0);
        let state = match target {
            Target::Pool => q.fetch_optional(&self.reader).await?,
            Target::Tx(conn) => q.fetch_optional(conn).await?,
        };
        state.map(|s| parse_state(&s)).transpose()
    }

    async fn job_expired(&self, limit: usize) -> Result<Vec<Expired>, sqlx::Error> {
        let rows: Vec<(Uuid, Option<Uuid>, String, i64, i64)> =
            sqlx::query_as(self.sql.job_expired.clone())
                .bind(now_micros())
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(&self.reader)
                .await?;
        let mut expired = Vec::with_capacity(rows.len());
        for (id, token, queue, attempts, max_attempts) in rows {
            if let Some(token) = token {
                expired.push(Expired {
                    id: JobId(id),
                    token,
                    queue,
                    attempts: to_u32(attempts, "attempts")?,
                    max_attempts: to_u32(max_attempts, "max_attempts")?,
                });
            }
        }
        Ok(expired)
    }

    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64, sqlx::Error> {
        let now = now_micros();
        let at = rfc3339(now);
        self.pairs(
            &self.sql.job_rescue,
            &[now, i64::from(p.dead)],
            &[p.error, &at],
            &[i64::from(p.errors_kept)],
            p.jobs.iter().map(|(id, token)| (id.0, *token)),
        )
        .await
    }

    async fn job_cancel(&self, id: JobId) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.job_cancel.clone())
            .bind(id.0)
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_retry(
        &self,
        conn: &mut SqliteConnection,
        id: JobId,
    ) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar(self.sql.job_retry.clone())
            .bind(id.0)
            .bind(now_micros())
            .fetch_optional(conn)
            .await
    }

    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>, sqlx::Error> {
        let now = now_micros();
        sqlx::query_scalar(self.sql.job_reschedule.clone())
            .bind(p.id.0)
            .bind(p.delay.map(|d| now.saturating_add(micros(d))))
            .bind(p.priority)
            .bind(now)
            .fetch_optional(&self.writer)
            .await
    }

    async fn job_get(&self, id: JobId) -> Result<Option<Job>, sqlx::Error> {
        let row = sqlx::query(self.sql.job_get.clone())
            .bind(id.0)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(job_detail_from_row).transpose()
    }

    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_list.clone())
            .bind(req.queue.as_deref())
            .bind(req.state.map(|s| s.as_str()))
            .bind(req.before.map(|id| id.0))
            .bind(i64::try_from(req.limit).unwrap_or(i64::MAX))
            .bind(req.kind.as_deref())
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|r| job_from_row(r).map(|(j, _)| j))
            .collect()
    }

    async fn job_stats(
        &self,
        queue: Option<&str>,
        cap: Option<u64>,
    ) -> Result<Vec<QueueStats>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_stats.clone())
            .bind(now_micros())
            .bind(queue)
            .bind(cap.map_or(-1, |c| i64::try_from(c).unwrap_or(i64::MAX)))
            .fetch_all(&self.reader)
            .await?;
        let count = |row: &SqliteRow, col: &str| -> Result<u64, sqlx::Error> {
            let v: i64 = row.try_get(col)?;
            Ok(u64::try_from(v).unwrap_or(0))
        };
        rows.iter()
            .map(|row| {
                Ok(QueueStats {
                    queue: row.try_get("queue")?,
                    waiting: count(row, "waiting")?,
                    available: count(row, "available")?,
                    scheduled: count(row, "scheduled")?,
                    running: count(row, "running")?,
                    oldest_due: to_time_opt(row.try_get("oldest_due")?)?,
                    completed: count(row, "completed")?,
                    dead: count(row, "dead")?,
                    cancelled: count(row, "cancelled")?,
                    ..QueueStats::default()
                })
            })
            .collect()
    }

    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = p.states.iter().map(|s| s.as_str()).collect();
        let done = sqlx::query(self.sql.job_prune.clone())
            .bind(now_micros().saturating_sub(micros(p.older_than)))
            .bind(p.queue)
            .bind(json_array(&states))
            .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let rows = sqlx::query(self.sql.job_ids.clone())
            .bind(m.queue)
            .bind(json_array(&states))
            .bind(m.kind)
            .bind(created_before(m.older_than))
            .bind(m.before.map(|id| id.0))
            .bind(i64::try_from(m.limit).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|r| Ok((JobId(r.try_get("id")?), r.try_get("queue")?)))
            .collect()
    }

    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let n: i64 = sqlx::query_scalar(self.sql.job_count.clone())
            .bind(m.queue)
            .bind(json_array(&states))
            .bind(m.kind)
            .bind(created_before(m.older_than))
            .fetch_one(&self.reader)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64, sqlx::Error> {
        self.by_ids(&self.sql.job_cancel_many, Some(now_micros()), None, ids)
            .await
    }

    async fn job_retry_many(
        &self,
        conn: &mut SqliteConnection,
        ids: &[JobId],
    ) -> Result<u64, sqlx::Error> {
        let mut done = 0;
        for chunk in ids.chunks(MAX_PARAMS - 2) {
            let mut q =
                sqlx::query(rows_of(&self.sql.job_retry_many, chunk.len())).bind(now_micros());
            for id in chunk {
                q = q.bind(id.0);
            }
            done += q.execute(&mut *conn).await?.rows_affected();
        }
        Ok(done)
    }

    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_PARAMS) {
            let mut q = sqlx::query_scalar(rows_of(&self.sql.job_workflows, chunk.len()));
            for id in chunk {
                q = q.bind(id.0);
            }
            let found: Vec<Uuid> = q.fetch_all(&self.reader).await?;
            out.extend(found.into_iter().map(WorkflowId));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let n: i64 = sqlx::query_scalar(self.sql.job_dependents_count.clone())
            .bind(m.queue)
            .bind(json_array(&states))
            .bind(m.kind)
            .bind(created_before(m.older_than))
            .fetch_one(&self.reader)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn job_delete_many(
        &self,
        ids: &[JobId],
        states: &[JobState],
    ) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        self.by_ids(
            &self.sql.job_delete_many,
            None,
            Some(&json_array(&states)),
            ids,
        )
        .await
    }

    async fn maintenance_claim(
        &self,
        task: &str,
        token: Uuid,
        lease: Duration,
    ) -> Result<bool, sqlx::Error> {
        let now = now_micros();
        let done = sqlx::query(self.sql.maintenance_claim.clone())
            .bind(task)
            .bind(token)
            .bind(now.saturating_add(micros(lease)))
            .bind(now)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn maintenance_release(
        &self,
        task: &str,
        token: Uuid,
        next_in: Duration,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.maintenance_release.clone())
            .bind(task)
            .bind(token)
            .bind(now_micros().saturating_add(micros(next_in)))
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    // Periodic jobs (schedules).

    type Tx = Transaction<'static, Sqlite>;

    /// `BEGIN IMMEDIATE` on the writer connection: the write lock is taken before anything is
    /// read, so concurrent schedulers (of this or another process) queue instead of failing.
    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_control_get.clone())
            .bind(queue)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(control).transpose()
    }

    async fn queue_control_lock(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
    ) -> Result<Option<QueueControl>, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_control_lock.clone())
            .bind(queue)
            .fetch_optional(conn)
            .await?;
        row.as_ref().map(control).transpose()
    }

    async fn queue_control_list(&self) -> Result<Vec<QueueControl>, sqlx::Error> {
        let rows = sqlx::query(self.sql.queue_control_list.clone())
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(control).collect()
    }

    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_paused.clone())
            .bind(queue)
            .bind(paused)
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_limit.clone())
            .bind(queue)
            .bind(limit.map(i64::from))
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_set_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_rate.clone())
            .bind(queue)
            .bind(rate.map(|(n, _)| i64::from(n)))
            .bind(rate.map(|(_, period)| period))
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_rate_state(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
    ) -> Result<RateState, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_rate_state.clone())
            .bind(queue)
            .fetch_one(conn)
            .await?;
        let count: i64 = row.try_get("rate_count")?;
        Ok(RateState {
            window: row.try_get("rate_window")?,
            count: u32::try_from(count).unwrap_or(0),
            now_us: row.try_get("now_us")?,
        })
    }

    async fn queue_rate_record(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
        window: i64,
        count: u32,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_rate_record.clone())
            .bind(queue)
            .bind(window)
            .bind(i64::from(count))
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn queue_set_key_limit(
        &self,
        queue: &str,
        limit: Option<u32>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_key_limit.clone())
            .bind(queue)
            .bind(limit.map(i64::from))
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_set_key_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.begin().await?;
        sqlx::query(self.sql.queue_set_key_rate.clone())
            .bind(queue)
            .bind(rate.map(|(n, _)| i64::from(n)))
            .bind(rate.map(|(_, period)| period))
            .bind(now_micros())
            .execute(&mut *tx)
            .await?;
        sqlx::query(self.sql.queue_set_key_rate_forget.clone())
            .bind(queue)
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    }

    async fn queue_key_rate_get(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>, sqlx::Error> {
        let row: Option<(i64, i64)> = sqlx::query_as(self.sql.queue_key_rate_get.clone())
            .bind(queue)
            .bind(key)
            .fetch_optional(conn)
            .await?;
        Ok(row.map(|(w, n)| (w, u32::try_from(n).unwrap_or(0))))
    }

    async fn queue_key_rate_put(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
        key: &str,
        window: i64,
        count: u32,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_key_rate_put.clone())
            .bind(queue)
            .bind(key)
            .bind(window)
            .bind(i64::from(count))
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_fair.clone())
            .bind(queue)
            .bind(on)
            .bind(now_micros())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn queue_key_cursor(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_key_cursor.clone())
            .bind(queue)
            .bind(cursor)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn job_key_leases(
        &self,
        target: Target<'_, SqliteConnection>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>, sqlx::Error> {
        let q = sqlx::query_as::<_, (String, i64)>(self.sql.job_key_leases.clone()).bind(queue);
        let rows = match target {
            Target::Pool => q.fetch_all(&self.reader).await?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        Ok(rows
            .into_iter()
            .map(|(k, n)| (k, u64::try_from(n).unwrap_or(0)))
            .collect())
    }

    async fn job_key_next(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
        after: &str,
        n: usize,
    ) -> Result<Vec<String>, sqlx::Error> {
        sqlx::query_scalar(self.sql.job_key_next.clone())
            .bind(queue)
            .bind(after)
            .bind(i64::try_from(n).unwrap_or(i64::MAX))
            .fetch_all(conn)
            .await
    }

    async fn job_claim_key(
        &self,
        conn: &mut SqliteConnection,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let statement = match key {
            Some(_) => self.sql.job_claim_key.clone(),
            None => self.sql.job_claim_unkeyed.clone(),
        };
        let mut q = sqlx::query(statement)
            .bind(p.queue)
            .bind(now_micros())
            .bind(micros(p.lease))
            .bind(p.worker)
            .bind(i64::try_from(p.limit).unwrap_or(i64::MAX));
        if let Some(key) = key {
            q = q.bind(key);
        }
        let rows = q.fetch_all(conn).await?;
        rows.iter().map(leased_from_row).collect()
    }

    async fn queue_key_rate_prune(
        &self,
        queue: &str,
        before: i64,
        limit: usize,
    ) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.queue_key_rate_prune.clone())
            .bind(queue)
            .bind(before)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64, sqlx::Error> {
        let n: i64 = sqlx::query_scalar(self.sql.job_key_waiting.clone())
            .bind(queue)
            .bind(key)
            .bind(now_micros())
            .fetch_one(&self.reader)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn job_live_leases(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
    ) -> Result<u64, sqlx::Error> {
        let n: i64 = sqlx::query_scalar(self.sql.job_live_leases.clone())
            .bind(queue)
            .fetch_one(conn)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn tx_begin(&self) -> Result<Self::Tx, sqlx::Error> {
        self.begin().await
    }

    fn tx_conn(tx: &mut Self::Tx) -> &mut SqliteConnection {
        tx
    }

    async fn tx_commit(&self, tx: Self::Tx) -> Result<(), sqlx::Error> {
        tx.commit().await
    }

    async fn tx_rollback(&self, tx: Self::Tx) -> Result<(), sqlx::Error> {
        tx.rollback().await
    }

    type Savepoint<'c> = Transaction<'c, Sqlite>;

    async fn savepoint<'c>(
        &self,
        conn: &'c mut SqliteConnection,
    ) -> Result<Transaction<'c, Sqlite>, sqlx::Error> {
        conn.begin().await
    }

    async fn savepoint_release(
        &self,
        savepoint: Transaction<'_, Sqlite>,
    ) -> Result<(), sqlx::Error> {
        savepoint.commit().await
    }

    async fn savepoint_rollback(
        &self,
        savepoint: Transaction<'_, Sqlite>,
    ) -> Result<(), sqlx::Error> {
        savepoint.rollback().await
    }

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

    async fn workflow_insert(
        &self,
        conn: &mut SqliteConnection,
        w: WorkflowInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.workflow_insert.clone())
            .bind(w.id.0)
            .bind(w.name)
            .bind(w.open)
            .bind(w.callback.map(|c| c.0))
            .bind(now_micros())
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn workflow_steps_insert(
        &self,
        conn: &mut SqliteConnection,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<(), sqlx::Error> {
        for chunk in steps.chunks(MAX_PARAMS / 3) {
            let mut q = sqlx::query(rows_of(&self.sql.workflow_steps_insert, chunk.len()));
            for (job, step) in chunk {
                q = q.bind(workflow.0).bind(job.0).bind(*step);
            }
            q.execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn workflow_deps_insert(
        &self,
        conn: &mut SqliteConnection,
        edges: &[WorkflowEdge],
    ) -> Result<(), sqlx::Error> {
        for chunk in edges.chunks(MAX_PARAMS / 3) {
            let mut q = sqlx::query(rows_of(&self.sql.workflow_deps_insert, chunk.len()));
            for e in chunk {
                q = q.bind(e.dep.0).bind(e.job.0).bind(e.policy.code());
            }
            q.execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn workflow_lock(
        &self,
        conn: &mut SqliteConnection,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        let row = sqlx::query(self.sql.workflow_lock.clone())
            .bind(id.0)
            .fetch_optional(conn)
            .await?;
        row.as_ref().map(workflow_from_row).transpose()
    }

    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.workflow_seal.clone())
            .bind(id.0)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn workflow_dependents(
        &self,
        mut target: Target<'_, SqliteConnection>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in finished.chunks(MAX_PARAMS - 2) {
            let mut q = sqlx::query_scalar(rows_of(&self.sql.workflow_dependents, chunk.len()));
            for id in chunk {
                q = q.bind(id.0);
            }
            let ids: Vec<Uuid> = match target.reborrow() {
                Target::Pool => q.fetch_all(&self.reader).await?,
                Target::Tx(conn) => q.fetch_all(conn).await?,
            };
            out.extend(ids.into_iter().map(JobId));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    async fn workflow_block(
        &self,
        target: Target<'_, SqliteConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids = self
            .ids_returning(&self.sql.workflow_block, target, waiting)
            .await?;
        Ok(ids.into_iter().map(|(id, _)| id).collect())
    }

    async fn workflow_promote(
        &self,
        target: Target<'_, SqliteConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let rows = self
            .ids_returning(&self.sql.workflow_promote, target, waiting)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, queue)| (id, queue.unwrap_or_default()))
            .collect())
    }

    async fn workflow_reopen(
        &self,
        conn: &mut SqliteConnection,
        retried: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids = self
            .ids_returning(&self.sql.workflow_reopen, Target::Tx(conn), retried)
            .await?;
        Ok(ids.into_iter().map(|(id, _)| id).collect())
    }

    async fn workflow_blocked(
        &self,
        conn: &mut SqliteConnection,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_PARAMS) {
            let mut q = sqlx::query(rows_of(&self.sql.workflow_blocked, chunk.len()));
            for id in chunk {
                q = q.bind(id.0);
            }
            for row in q.fetch_all(&mut *conn).await? {
                out.push((JobId(row.try_get("id")?), JobId(row.try_get("blocked_by")?)));
            }
        }
        Ok(out)
    }

    async fn workflow_waiting(
        &self,
        after: Option<JobId>,
        limit: usize,
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids: Vec<Uuid> = sqlx::query_scalar(self.sql.workflow_waiting.clone())
            .bind(after.map(|id| id.0))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await?;
        Ok(ids.into_iter().map(JobId).collect())
    }

    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        let row = sqlx::query(self.sql.workflow_get.clone())
            .bind(id.0)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(workflow_from_row).transpose()
    }

    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>, sqlx::Error> {
        let rows = sqlx::query(self.sql.workflow_jobs.clone())
            .bind(id.0)
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|row| {
                let (mut job, _) = job_from_row(row)?;
                job.step = row.try_get("step")?;
                Ok(job)
            })
            .collect()
    }

    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>, sqlx::Error> {
        let rows = sqlx::query(self.sql.workflow_edges.clone())
            .bind(id.0)
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(WorkflowEdge {
                    job: JobId(row.try_get("job_id")?),
                    dep: JobId(row.try_get("dep_id")?),
                    policy: DepPolicy::from_code(row.try_get("policy")?),
                })
            })
            .collect()
    }

    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>, sqlx::Error> {
        let rows = sqlx::query(self.sql.workflow_list.clone())
            .bind(before.map(|id| id.0))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await?;
        let mut out: Vec<(StoredWorkflow, Vec<(JobState, u64)>)> = Vec::new();
        for row in &rows {
            let w = workflow_from_row(row)?;
            if out.last().is_none_or(|(last, _)| last.id != w.id) {
                out.push((w, Vec::new()));
            }
            if let Some(state) = row.try_get::<Option<String>, _>("state")? {
                let n: i64 = row.try_get("jobs")?;
                if let Some((_, counts)) = out.last_mut() {
                    counts.push((parse_state(&state)?, u64::try_from(n).unwrap_or(0)));
                }
            }
        }
        Ok(out)
    }

    async fn workflow_prune_lock(
        &self,
        conn: &mut SqliteConnection,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>, sqlx::Error> {
        let (after_at, after_id) = match p.after {
            Some((at, id)) => (at.timestamp_micros(), id.0.as_bytes().to_vec()),
            None => (i64::MIN, Vec::new()),
        };
        let rows = sqlx::query(self.sql.workflow_prune_lock.clone())
            .bind(now_micros().saturating_sub(micros(p.older_than)))
            .bind(after_at)
            .bind(after_id)
            .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
            .fetch_all(conn)
            .await?;
        rows.iter()
            .map(|row| {
                Ok((
                    WorkflowId(row.try_get("id")?),
                    to_time(row.try_get("created_at")?)?,
                ))
            })
            .collect()
    }

    /// In the caller's transaction: the workflows that qualify (returning their ids), then
    /// the dependencies of their jobs, their jobs, their step rows and their rows, in chunks
    /// under the parameter limit.
    async fn workflow_prune(
        &self,
        conn: &mut SqliteConnection,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned, sqlx::Error> {
        let now = now_micros();
        let cutoff = |state| p.age(state).map(|age| now.saturating_sub(micros(age)));
        let mut done = WorkflowPruned::default();
        for chunk in p.ids.chunks(MAX_PARAMS - 3) {
            let mut q = sqlx::query_scalar(rows_of(&self.sql.workflow_prune, chunk.len()))
                .bind(cutoff(JobState::Completed))
                .bind(cutoff(JobState::Dead))
                .bind(cutoff(JobState::Cancelled));
            for id in chunk {
                q = q.bind(id.0);
            }
            let doomed: Vec<Uuid> = q.fetch_all(&mut *conn).await?;
            if doomed.is_empty() {
                continue;
            }
            let over_doomed = |statement: &SqlStr| {
                let mut q = sqlx::query(rows_of(statement, doomed.len()));
                for id in &doomed {
                    q = q.bind(*id);
                }
                q
            };
            over_doomed(&self.sql.workflow_prune_deps)
                .execute(&mut *conn)
                .await?;
            done.jobs += over_doomed(&self.sql.workflow_prune_jobs)
                .execute(&mut *conn)
                .await?
                .rows_affected();
            over_doomed(&self.sql.workflow_prune_steps)
                .execute(&mut *conn)
                .await?;
            done.workflows += over_doomed(&self.sql.workflow_prune_rows)
                .execute(&mut *conn)
                .await?
                .rows_affected();
        }
        Ok(done)
    }

    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_deps.clone())
            .bind(id.0)
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(Dependency {
                    id: JobId(row.try_get("dep_id")?),
                    step: row
                        .try_get::<Option<String>, _>("step")?
                        .unwrap_or_default(),
                    policy: DepPolicy::from_code(row.try_get("policy")?),
                    state: row
                        .try_get::<Option<String>, _>("state")?
                        .map(|s| parse_state(&s))
                        .transpose()?,
                    output: json_column(row.try_get("output")?, "output")?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples_repeat_after_values() {
        let sql = Statements::new(&[]);
        let s = repeat_tuple(sql.job_complete_many.as_str(), 3);
        assert!(s.contains("(?, ?),(?, ?),(?, ?)\n) AS leases"), "{s}");
        let s = repeat_tuple(sql.job_insert.as_str(), 2);
        assert_eq!(s.matches('?').count(), 2 * INSERT_PARAMS);
        assert!(
            !sql.job_insert.as_str().contains("--"),
            "comments are not sent"
        );
    }
}
