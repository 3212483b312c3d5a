//! [`MySqlDriver`]: the MySQL and MariaDB statements behind the engine.

use std::collections::HashMap;
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
use queue_core::workflow::{DepPolicy, Dependency, WorkflowId};
use queue_core::{
    Job, JobId, JobState, Lease, Leased, ListRequest, NewJob, QueueControl, QueueStats,
};
use serde_json::value::RawValue;
use sqlx::mysql::{MySqlConnection, MySqlPool, MySqlRow};
use sqlx::{Acquire, Executor, MySql, Row, Transaction};
use uuid::Uuid;

use crate::migrate::{
    lock_timeout, statements, LockRow, LockRowSql, Migrator, MIGRATIONS, MIGRATION_LOCK_TIMEOUT,
};
use crate::server::ServerInfo;
use crate::sql::Statements;

/// Rows per multi-row INSERT (at most 13 placeholders each, far below the protocol's 65,535).
const INSERT_CHUNK_ROWS: usize = 500;
/// Leases per `job_complete_many` / `job_rescue` statement (3 placeholders each, under 65,535).
const PAIR_CHUNK: usize = 20_000;
/// Ids per statement of the workflow statements over lists of jobs (at most 3 placeholders
/// each: `workflow_block_update`), and rows per `workflow_steps_insert` /
/// `workflow_deps_insert` (3 placeholders each).
const ID_CHUNK: usize = 20_000;

/// The MySQL/MariaDB driver behind [`crate::MySqlQueue`]: a pool, the prefixed statements and
/// what was detected about the server. Reached through [`queue_core::Backend::engine`].
#[derive(Debug)]
pub struct MySqlDriver {
    pub(crate) pool: MySqlPool,
    pub(crate) prefix: String,
    pub(crate) sql: Statements,
    pub(crate) server: ServerInfo,
    /// The hosts of the URL and the connections' retirement (see `classify`).
    pub(crate) nodes: crate::server::Nodes,
    /// Whether migrations may serialize on `GET_LOCK` (otherwise on a leased lock row).
    pub(crate) advisory_locks: bool,
    /// Whether locking reads may skip rows other transactions hold (`SKIP LOCKED`, honoured).
    pub(crate) skip_locked: bool,
}

impl MySqlDriver {
    /// The statements that take and renew the migration lock row.
    fn lock_row_sql(&self) -> LockRowSql {
        LockRowSql {
            take: self.sql.migration_lock_row.clone(),
            lease: self.sql.migration_lock_lease.clone(),
        }
    }
}

fn decode(msg: String) -> sqlx::Error {
    sqlx::Error::Decode(msg.into())
}

fn chrono_micros(d: Duration) -> chrono::Duration {
    chrono::Duration::microseconds(micros(d))
}

/// Queues counted per `job_stats` statement (twelve values bound per queue).
const STATS_QUEUES: usize = 100;

/// Binds the filter of `job_ids` / `job_count`: queue, states, kind, age.
fn bind_match<'q>(
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

fn text(row: &MySqlRow, col: &str) -> Result<String, sqlx::Error> {
    // Columns with a binary collation or type carry the BINARY flag, which the driver's type
    // check reads as "bytes"; the text is UTF-8 all the same.
    row.try_get_unchecked::<String, _>(col)
}

fn opt_text(row: &MySqlRow, col: &str) -> Result<Option<String>, sqlx::Error> {
    row.try_get_unchecked::<Option<String>, _>(col)
}

/// A nullable BINARY(16) column as a UUID.
fn opt_uuid(row: &MySqlRow, col: &str) -> Result<Option<Uuid>, sqlx::Error> {
    row.try_get::<Option<Uuid>, _>(col)
}

fn payload(row: &MySqlRow) -> Result<Box<RawValue>, sqlx::Error> {
    RawValue::from_string(text(row, "payload")?)
        .map_err(|e| decode(format!("stored payload is not JSON: {e}")))
}

/// JSON text of an optional column, checked.
fn json_column(row: &MySqlRow, col: &str) -> Result<Option<Box<RawValue>>, sqlx::Error> {
    opt_text(row, col)?
        .map(|t| {
            RawValue::from_string(t).map_err(|e| decode(format!("stored {col} is not JSON: {e}")))
        })
        .transpose()
}

fn timeout(row: &MySqlRow) -> Result<Option<Duration>, sqlx::Error> {
    Ok(row
        .try_get::<Option<i64>, _>("timeout_us")?
        .map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0))))
}

fn parse_state(s: &str) -> Result<JobState, sqlx::Error> {
    s.parse()
        .map_err(|_| decode(format!("unknown job state {s:?}")))
}

/// A schedule row (`schedule_get`, `schedule_list`).
fn schedule_from_row(row: &MySqlRow) -> Result<StoredSchedule, sqlx::Error> {
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
fn bind_definition<'q>(
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
fn job_from_row(row: &MySqlRow) -> Result<Job, sqlx::Error> {
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

/// A due pending row read by a claim, with its version and the database's now.
#[derive(Debug)]
pub struct Candidate {
    job: Job,
    version: i64,
    db_now: DateTime<Utc>,
}

impl Candidate {
    fn from_row(row: &MySqlRow) -> Result<Self, sqlx::Error> {
        let created_at = row.try_get("created_at")?;
        Ok(Candidate {
            job: Job {
                id: JobId(row.try_get("id")?),
                queue: text(row, "queue")?,
                payload: payload(row)?,
                priority: row.try_get("priority")?,
                state: JobState::Pending,
                attempts: row.try_get("attempts")?,
                max_attempts: row.try_get("max_attempts")?,
                run_at: row.try_get("run_at")?,
                lease_expires_at: None,
                worker: None,
                last_error: opt_text(row, "last_error")?,
                dedup_key: opt_text(row, "dedup_key")?,
                kind: opt_text(row, "kind")?,
                meta: json_column(row, "meta")?,
                timeout: timeout(row)?,
                snoozes: row.try_get("snoozes")?,
                errors: Vec::new(),
                output: None,
                workflow: opt_uuid(row, "workflow_id")?.map(WorkflowId),
                step: None,
                blocked_by: opt_uuid(row, "blocked_by")?.map(JobId),
                depends_on: Vec::new(),
                created_at,
                updated_at: created_at,
                finished_at: None,
            },
            version: row.try_get("version")?,
            db_now: row.try_get("db_now")?,
        })
    }

    /// The job as the claim stored it: exactly the values the UPDATE set.
    fn into_leased(
        self,
        token: Uuid,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
        worker: &str,
    ) -> Result<Leased, sqlx::Error> {
        let mut job = self.job;
        job.state = JobState::Running;
        job.attempts += 1;
        job.lease_expires_at = Some(expires_at);
        job.worker = Some(worker.to_owned());
        job.updated_at = now;
        Leased::from_claimed(job, token).map_err(|e| decode(e.to_string()))
    }
}

impl MySqlDriver {
    /// Inserts jobs in multi-row statements of at most [`INSERT_CHUNK_ROWS`] rows and about
    /// half of `max_allowed_packet`, on one connection (the caller owns the transaction).
    async fn insert_chunks(
        &self,
        conn: &mut MySqlConnection,
        chunks: &[(usize, usize)],
        p: JobInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        for &(start, end) in chunks {
            let jobs = &p.jobs[start..end];
            let meta = jobs.iter().any(|j| {
                j.meta_json().is_some()
                    || j.timeout_value().is_some()
                    || j.concurrency_key_value().is_some()
            });
            let sql = self.sql.job_insert_rows(end - start, meta);
            let mut q = sqlx::query(sql);
            for (job, delay) in jobs.iter().zip(&p.delays[start..end]) {
                q = q
                    .bind(job.id().0)
                    .bind(job.queue())
                    .bind(job.payload_json())
                    .bind(job.priority_value())
                    .bind(job.initial_state().as_str())
                    .bind(job.max_attempts_value())
                    .bind(micros(*delay))
                    .bind(job.dedup_key_value())
                    .bind(job.kind_value())
                    .bind(job.workflow_id().map(|w| w.0));
                if meta {
                    q = q
                        .bind(job.meta_json())
                        .bind(job.timeout_value().map(micros))
                        .bind(job.concurrency_key_value().map(str::as_bytes));
                }
            }
            q.execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// The `(start, end)` of each INSERT: at most [`INSERT_CHUNK_ROWS`] rows and about half of
    /// the server's `max_allowed_packet` each.
    fn insert_chunks_of(&self, jobs: &[NewJob]) -> Vec<(usize, usize)> {
        let budget = (self.server.max_packet / 2).max(1 << 20) as usize;
        let mut chunks = Vec::new();
        let mut start = 0;
        while start < jobs.len() {
            let mut end = start;
            let mut bytes = 0;
            while end < jobs.len() && end - start < INSERT_CHUNK_ROWS {
                let j = &jobs[end];
                let size = j.payload_json().len()
                    + j.queue().len()
                    + j.dedup_key_value().map_or(0, str::len)
                    + j.kind_value().map_or(0, str::len)
                    + j.meta_json().map_or(0, str::len)
                    + j.concurrency_key_value().map_or(0, str::len)
                    + 128;
                if end > start && bytes + size > budget {
                    break;
                }
                bytes += size;
                end += 1;
            }
            chunks.push((start, end));
            start = end;
        }
        chunks
    }

    /// The claim's locking SELECT and its UPDATE, on `conn` (inside a transaction).
    async fn claim_on(
        &self,
        conn: &mut MySqlConnection,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_claim.clone())
            .bind(p.queue)
            .bind(p.controls_checked)
            .bind(p.queue)
            .bind(p.limit as u64)
            .fetch_all(&mut *conn)
            .await?;
        self.lease_locked(conn, &rows, p).await
    }

    /// A claim's step 2 (`job_claim_update`): leases the rows its locking SELECT (`job_claim`,
    /// `job_claim_key`, `job_claim_unkeyed`) read and locked, on the same `conn`, with the
    /// database's now that the SELECT read.
    async fn lease_locked(
        &self,
        conn: &mut MySqlConnection,
        rows: &[MySqlRow],
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let candidates = rows
            .iter()
            .map(Candidate::from_row)
            .collect::<Result<Vec<_>, _>>()?;
        // The latest reading of the database's clock (one per locking statement: a keyed claim
        // locks several keys' jobs with a statement each), so no claimed job is stamped
        // before it was read due.
        let now = candidates
            .iter()
            .map(|c| c.db_now)
            .max()
            .unwrap_or(candidates[0].db_now);
        let expires_at = now + chrono_micros(p.lease);
        let tokens: Vec<Uuid> = candidates.iter().map(|_| Uuid::new_v4()).collect();
        let mut q = sqlx::query(self.sql.job_claim_update(candidates.len()));
        for (c, token) in candidates.iter().zip(&tokens) {
            q = q.bind(c.job.id.0).bind(*token);
        }
        q = q.bind(expires_at).bind(p.worker).bind(now);
        for c in &candidates {
            q = q.bind(c.job.id.0);
        }
        let done = q.execute(&mut *conn).await?;
        if done.rows_affected() != candidates.len() as u64 {
            // Cannot happen while the rows are locked; refuse rather than hand out a bad lease.
            return Err(sqlx::Error::Protocol(format!(
                "claim updated {} of {} locked rows",
                done.rows_affected(),
                candidates.len()
            )));
        }
        candidates
            .into_iter()
            .zip(tokens)
            .map(|(c, token)| c.into_leased(token, now, expires_at, p.worker))
            .collect()
    }

    /// `workflow_block` on `conn` (inside a transaction): per chunk of ids, the locking SELECT
    /// of the jobs to cancel with their blocking dependency, then the UPDATE of exactly those.
    async fn block_on(
        &self,
        conn: &mut MySqlConnection,
        waiting: &[JobId],
        prefilter: bool,
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let mut cancelled = Vec::new();
        for chunk in sorted_ids(waiting).chunks(ID_CHUNK) {
            let chunk = if prefilter {
                let read = self.sql.workflow_block_read(chunk.len());
                self.candidates(conn, read, chunk).await?
            } else {
                chunk.to_vec()
            };
            if chunk.is_empty() {
                continue;
            }
            let mut q = sqlx::query(self.sql.workflow_block(chunk.len()));
            for id in chunk {
                q = q.bind(id);
            }
            let blocked = q
                .fetch_all(&mut *conn)
                .await?
                .iter()
                .map(|r| {
                    Ok((
                        r.try_get::<Uuid, _>("id")?,
                        r.try_get::<Uuid, _>("blocked_by")?,
                    ))
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()?;
            if blocked.is_empty() {
                continue;
            }
            let mut q = sqlx::query(self.sql.workflow_block_update(blocked.len()));
            for (id, dep) in &blocked {
                q = q.bind(*id).bind(*dep);
            }
            for (id, _) in &blocked {
                q = q.bind(*id);
            }
            let done = q.execute(&mut *conn).await?;
            check_locked("workflow_block", done.rows_affected(), blocked.len())?;
            cancelled.extend(blocked.into_iter().map(|(id, _)| JobId(id)));
        }
        Ok(cancelled)
    }

    /// `workflow_promote` on `conn` (inside a transaction): per chunk of ids, the locking
    /// SELECT of the jobs whose dependencies are resolved, then the UPDATE of exactly those.
    async fn promote_on(
        &self,
        conn: &mut MySqlConnection,
        waiting: &[JobId],
        prefilter: bool,
    ) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let mut promoted = Vec::new();
        for chunk in sorted_ids(waiting).chunks(ID_CHUNK) {
            let chunk = if prefilter {
                let read = self.sql.workflow_promote_read(chunk.len());
                self.candidates(conn, read, chunk).await?
            } else {
                chunk.to_vec()
            };
            if chunk.is_empty() {
                continue;
            }
            let mut q = sqlx::query(self.sql.workflow_promote(chunk.len()));
            for id in chunk {
                q = q.bind(id);
            }
            let ready = q
                .fetch_all(&mut *conn)
                .await?
                .iter()
                .map(|r| Ok((JobId(r.try_get("id")?), text(r, "queue")?)))
                .collect::<Result<Vec<_>, sqlx::Error>>()?;
            if ready.is_empty() {
                continue;
            }
            let mut q = sqlx::query(self.sql.workflow_promote_update(ready.len()));
            for (id, _) in &ready {
                q = q.bind(id.0);
            }
            let done = q.execute(&mut *conn).await?;
            check_locked("workflow_promote", done.rows_affected(), ready.len())?;
            promoted.extend(ready);
        }
        Ok(promoted)
    }

    /// The ids of `chunk` that `read` (a workflow statement's SELECT without its locks) picks:
    /// a plain READ COMMITTED read, so that a settle locks only the jobs that may change and
    /// their dependencies, never those of a join still waiting for most of them (which would
    /// hold running jobs' rows against their own completions).
    async fn candidates(
        &self,
        conn: &mut MySqlConnection,
        read: sqlx::SqlStr,
        chunk: &[Uuid],
    ) -> Result<Vec<Uuid>, sqlx::Error> {
        let mut q = sqlx::query(read);
        for id in chunk {
            q = q.bind(*id);
        }
        let mut ids = q
            .fetch_all(&mut *conn)
            .await?
            .iter()
            .map(|r| r.try_get::<Uuid, _>("id"))
            .collect::<Result<Vec<_>, sqlx::Error>>()?;
        ids.sort_unstable();
        Ok(ids)
    }

    /// `job_complete_many` on `conn`, in statements of at most [`PAIR_CHUNK`] leases; unless
    /// `keep`, `job_complete_many_delete` first (the caller holds a transaction).
    async fn complete_on(
        &self,
        conn: &mut MySqlConnection,
        leases: &[Lease],
        keep: bool,
    ) -> Result<u64, sqlx::Error> {
        let mut total = 0;
        for chunk in leases.chunks(PAIR_CHUNK) {
            for delete in [true, false] {
                if delete && keep {
                    continue;
                }
                let mut q = sqlx::query(self.sql.job_complete_many(chunk.len(), delete));
                for l in chunk {
                    q = q.bind(l.job_id.0);
                }
                for l in chunk {
                    q = q.bind(l.job_id.0).bind(l.token);
                }
                total += q.execute(&mut *conn).await?.rows_affected();
            }
        }
        Ok(total)
    }

    /// Runs a fenced transition: `sql`'s own values (bound by `bind`), then the job's id and
    /// lease token; rows changed.
    async fn fenced<'q>(
        &self,
        q: sqlx::query::Query<'q, MySql, sqlx::mysql::MySqlArguments>,
        lease: &Lease,
    ) -> Result<u64, sqlx::Error> {
        let done = q
            .bind(lease.job_id.0)
            .bind(lease.token)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }
}

/// A row of `workflow_get`, `workflow_lock` or `workflow_list`.
fn workflow_from_row(row: &MySqlRow) -> Result<StoredWorkflow, sqlx::Error> {
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
fn sorted_ids(ids: &[JobId]) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The rows an UPDATE by ids changed must be the rows its locking SELECT locked.
fn check_locked(what: &str, changed: u64, locked: usize) -> Result<(), sqlx::Error> {
    if changed == locked as u64 {
        return Ok(());
    }
    // Cannot happen while the rows are locked; refuse rather than report what was not done.
    Err(sqlx::Error::Protocol(format!(
        "{what} updated {changed} of {locked} locked rows"
    )))
}

/// A concurrency key as stored (VARBINARY: the UTF-8 bytes the driver bound).
fn key_text(bytes: Vec<u8>) -> Result<String, sqlx::Error> {
    String::from_utf8(bytes)
        .map_err(|e| decode(format!("stored concurrency key is not UTF-8: {e}")))
}

/// A row of `queue_control_*`.
fn control(row: &MySqlRow) -> Result<QueueControl, sqlx::Error> {
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

#[async_trait]
impl Driver for MySqlDriver {
    type Conn = MySqlConnection;
    type Error = sqlx::Error;
    type Candidate = Candidate;
    type Migrator = Migrator;

    /// A read-only server (`--read-only`, a replica, a primary switched to read-only in place)
    /// answers every write on every connection: all pooled connections made until now are
    /// retired, so the next call reconnects (wherever the server's name now leads).
    fn classify(&self, error: &sqlx::Error) -> DriverFault {
        let fault = crate::error::classify(error);
        if fault == DriverFault::Unavailable {
            // A read-only server retires every pooled connection made before; with a host
            // list, the resolver looks for the server that takes writes.
            self.nodes.unavailable(crate::error::read_only(error));
        }
        fault
    }

    fn migrations(&self) -> &'static [Migration] {
        MIGRATIONS
    }

    async fn migration_lock(&self) -> Result<Self::Migrator, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        if self.advisory_locks {
            let got: Option<i64> = sqlx::query_scalar(self.sql.migration_lock.clone())
                .bind(&self.prefix)
                .bind(MIGRATION_LOCK_TIMEOUT.as_secs() as i64)
                .fetch_one(&mut *conn)
                .await?;
            if got != Some(1) {
                return Err(lock_timeout(&self.prefix));
            }
        }
        sqlx::query(self.sql.migration_table.clone())
            .execute(&mut *conn)
            .await?;
        if self.advisory_locks {
            return Ok(Migrator { conn, row: None });
        }
        let row = LockRow::take(self.lock_row_sql(), &mut conn, &self.pool, &self.prefix).await?;
        Ok(Migrator {
            conn,
            row: Some(row),
        })
    }

    async fn migration_applied(&self, m: &mut Self::Migrator) -> Result<Vec<i64>, sqlx::Error> {
        sqlx::query_scalar(self.sql.migration_applied.clone())
            .fetch_all(&mut *m.conn)
            .await
    }

    async fn migration_apply(
        &self,
        m: &mut Self::Migrator,
        migration: &Migration,
    ) -> Result<(), sqlx::Error> {
        if let Some(row) = &m.row {
            row.check(&self.lock_row_sql(), &mut m.conn, &self.prefix)
                .await?;
        }
        for stmt in statements(migration.sql, &self.prefix) {
            let lone_drop = crate::migrate::is_lone_drop(&stmt);
            match m.conn.execute(sqlx::AssertSqlSafe(stmt)).await {
                Ok(_) => {}
                // A statement that adds columns or an index and was applied before its record
                // (DDL commits by itself): "duplicate column name" or "duplicate key name",
                // which only such a rerun produces here. Likewise a statement that only drops
                // an index: "can't drop". (A statement that drops and adds in one ALTER is
                // written to be repeatable instead, and its "can't drop" is an error.)
                Err(e)
                    if crate::error::is_already_added(&e)
                        || (lone_drop && crate::error::is_already_dropped(&e)) =>
                {
                    tracing::info!(target: crate::LOG_TARGET, version = migration.version, "the migration's columns or indexes are in place already; recording it");
                }
                Err(e) => return Err(e),
            }
        }
        sqlx::query(self.sql.migration_record.clone())
            .bind(migration.version)
            .bind(migration.name)
            .execute(&mut *m.conn)
            .await?;
        Ok(())
    }

    async fn migration_unlock(
        &self,
        mut m: Self::Migrator,
        _commit: bool,
    ) -> Result<(), sqlx::Error> {
        // DDL commits by itself here; only the lock is left to release.
        if let Some(row) = m.row.take() {
            // The renewals stop first; a lock row left behind (this call failed) runs out with
            // its lease.
            let token = row.stop();
            sqlx::query(self.sql.migration_unlock_row.clone())
                .bind(&token)
                .execute(&mut *m.conn)
                .await?;
            return Ok(());
        }
        let unlocked = sqlx::query(self.sql.migration_unlock.clone())
            .bind(&self.prefix)
            .execute(&mut *m.conn)
            .await;
        if unlocked.is_err() {
            // The lock dies with the session; make sure this connection is not reused.
            m.conn.close_on_drop();
        }
        unlocked.map(|_| ())
    }

    async fn now(&self) -> Result<DateTime<Utc>, sqlx::Error> {
        sqlx::query_scalar(self.sql.now.clone())
            .fetch_one(&self.pool)
            .await
    }

    async fn job_insert(
        &self,
        target: Target<'_, MySqlConnection>,
        p: JobInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        let chunks = self.insert_chunks_of(p.jobs);
        match target {
            // One statement is atomic by itself: no BEGIN/COMMIT round trips (the engine wraps
            // several in a transaction).
            Target::Pool => {
                let mut conn = self.pool.acquire().await?;
                self.insert_chunks(&mut conn, &chunks, p).await
            }
            Target::Tx(conn) => self.insert_chunks(conn, &chunks, p).await,
        }
    }

    /// One statement per 500 jobs, or fewer when they would fill half of `max_allowed_packet`.
    fn job_insert_statements(&self, p: JobInsert<'_>) -> usize {
        self.insert_chunks_of(p.jobs).len()
    }

    /// The INSERT; after a duplicate entry, the holder of the key (step 2), and when there is
    /// none, whether the id or a live dedup key clashed instead (step 3), all on one connection.
    async fn job_insert_unique(
        &self,
        target: Target<'_, MySqlConnection>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert, sqlx::Error> {
        let mut pooled;
        let conn: &mut MySqlConnection = match target {
            Target::Pool => {
                pooled = self.pool.acquire().await?;
                &mut pooled
            }
            Target::Tx(conn) => conn,
        };
        let job = p.job;
        let inserted = sqlx::query(self.sql.job_insert_unique.clone())
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(job.max_attempts_value())
            .bind(micros(p.delay))
            .bind(job.dedup_key_value())
            .bind(job.kind_value())
            .bind(job.meta_json())
            .bind(job.timeout_value().map(micros))
            .bind(&p.key[..])
            .bind(p.states)
            .bind(job.concurrency_key_value().map(str::as_bytes))
            .execute(&mut *conn)
            .await;
        let err = match inserted {
            Ok(_) => return Ok(UniqueInsert::Inserted),
            Err(e) if crate::error::is_duplicate_entry(&e) => e,
            Err(e) => return Err(e),
        };
        // A failed statement is undone alone: a caller's transaction goes on.
        let holder: Option<Uuid> = sqlx::query_scalar(self.sql.job_insert_unique_holder.clone())
            .bind(&p.key[..])
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(id) = holder {
            return Ok(UniqueInsert::Held(JobId(id)));
        }
        let clashes: i64 = sqlx::query_scalar(self.sql.job_insert_unique_clash.clone())
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.dedup_key_value())
            .fetch_one(&mut *conn)
            .await?;
        if clashes > 0 {
            return Err(err);
        }
        Ok(UniqueInsert::Released)
    }

    async fn job_unique_replace(
        &self,
        target: Target<'_, MySqlConnection>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_unique_replace.clone())
            .bind(p.job.payload_json())
            .bind(p.job.priority_value())
            .bind(micros(p.delay))
            .bind(p.id.0);
        let done = match target {
            Target::Pool => q.execute(&self.pool).await?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>, sqlx::Error> {
        let holder: Option<Uuid> = sqlx::query_scalar(self.sql.job_unique_holder.clone())
            .bind(id.0)
            .fetch_optional(&self.pool)
            .await?;
        Ok(holder.map(JobId))
    }

    async fn job_dedup_live(
        &self,
        target: Target<'_, MySqlConnection>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>, sqlx::Error> {
        let sql = self.sql.job_dedup_live(queues.len(), keys.len());
        let mut q = sqlx::query(sql);
        for v in queues.iter().chain(keys) {
            q = q.bind(*v);
        }
        let rows = match target {
            Target::Pool => q.fetch_all(&self.pool).await?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        rows.iter()
            .map(|r| Ok((text(r, "queue")?, text(r, "dedup_live")?)))
            .collect()
    }

    /// One READ COMMITTED transaction: a locking SELECT that skips rows other claimers hold,
    /// then one UPDATE of exactly those rows.
    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let claimed = self.claim_on(&mut tx, p).await?;
        tx.commit().await?;
        Ok(claimed)
    }

    /// Completes and claims in one transaction: one commit (one log flush) instead of two.
    async fn job_complete_and_claim(
        &self,
        leases: &[Lease],
        keep: bool,
        p: JobClaim<'_>,
    ) -> Result<Option<(u64, Vec<Leased>)>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let completed = self.complete_on(&mut tx, leases, keep).await?;
        let claimed = self.claim_on(&mut tx, p).await?;
        tx.commit().await?;
        Ok(Some((completed, claimed)))
    }

    async fn job_claim_in(
        &self,
        conn: &mut MySqlConnection,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        self.claim_on(conn, p).await
    }

    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<Candidate>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_candidates.clone())
            .bind(p.queue)
            .bind(p.limit as u64)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(Candidate::from_row).collect()
    }

    /// One candidate: one row changed means claimed. Several: one autocommit statement, and the
    /// rows that carry our tokens are ours.
    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        candidates: Vec<Candidate>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let Some(first) = candidates.first() else {
            return Ok(Vec::new());
        };
        let now = first.db_now;
        let expires_at = now + chrono_micros(p.lease);
        let tokens: Vec<Uuid> = candidates.iter().map(|_| Uuid::new_v4()).collect();
        let changed = if candidates.len() == 1 {
            sqlx::query(self.sql.job_claim_candidates.clone())
                .bind(tokens[0])
                .bind(expires_at)
                .bind(p.worker)
                .bind(now)
                .bind(first.job.id.0)
                .bind(first.version)
                .bind(p.queue)
                .execute(&self.pool)
                .await?
                .rows_affected()
        } else {
            let mut q = sqlx::query(self.sql.job_claim_candidates_batch(candidates.len()));
            for (c, token) in candidates.iter().zip(&tokens) {
                q = q.bind(c.job.id.0).bind(*token);
            }
            q = q.bind(expires_at).bind(p.worker).bind(now);
            for c in &candidates {
                q = q.bind(c.job.id.0);
            }
            for c in &candidates {
                q = q.bind(c.job.id.0).bind(c.version);
            }
            q.bind(p.queue).execute(&self.pool).await?.rows_affected()
        };
        let won: Vec<bool> = if changed == candidates.len() as u64 {
            vec![true; candidates.len()]
        } else if changed == 0 {
            vec![false; candidates.len()]
        } else {
            let mut q = sqlx::query(self.sql.job_claim_candidates_tokens(candidates.len()));
            for c in &candidates {
                q = q.bind(c.job.id.0);
            }
            let current: HashMap<Uuid, Option<Uuid>> = q
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|r| Ok((r.try_get("id")?, r.try_get("lease_token")?)))
                .collect::<Result<_, sqlx::Error>>()?;
            candidates
                .iter()
                .zip(&tokens)
                .map(|(c, t)| current.get(&c.job.id.0) == Some(&Some(*t)))
                .collect()
        };
        candidates
            .into_iter()
            .zip(tokens)
            .zip(won)
            .filter(|(_, won)| *won)
            .map(|((c, token), _)| c.into_leased(token, now, expires_at, p.worker))
            .collect()
    }

    async fn job_complete(
        &self,
        target: Target<'_, MySqlConnection>,
        p: JobComplete<'_>,
    ) -> Result<u64, sqlx::Error> {
        let update = || {
            sqlx::query(self.sql.job_complete.clone())
                .bind(p.output)
                .bind(p.lease.job_id.0)
                .bind(p.lease.token)
        };
        if p.keep || p.output.is_some() {
            let done = match target {
                Target::Pool => update().execute(&self.pool).await?,
                Target::Tx(conn) => update().execute(conn).await?,
            };
            return Ok(done.rows_affected());
        }
        let delete = sqlx::query(self.sql.job_complete_delete.clone())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token);
        match target {
            Target::Pool => {
                let mut tx = self.pool.begin().await?;
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
        if keep {
            let mut conn = self.pool.acquire().await?;
            return self.complete_on(&mut conn, leases, keep).await;
        }
        let mut tx = self.pool.begin().await?;
        let done = self.complete_on(&mut tx, leases, keep).await?;
        tx.commit().await?;
        Ok(done)
    }

    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_fail_retry.clone())
            .bind(micros(p.delay))
            .bind(p.error)
            .bind(p.errors_kept)
            .bind(p.error);
        self.fenced(q, p.lease).await
    }

    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_fail_dead.clone())
            .bind(p.error)
            .bind(p.errors_kept)
            .bind(p.error);
        self.fenced(q, p.lease).await
    }

    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_snooze.clone())
            .bind(micros(p.delay))
            .bind(p.max_snoozes);
        self.fenced(q, p.lease).await
    }

    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>, sqlx::Error> {
        let row = sqlx::query(self.sql.job_meta_get.clone())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| {
            Ok(StoredMeta {
                meta: opt_text(&r, "meta")?,
                version: r.try_get("version")?,
            })
        })
        .transpose()
    }

    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_meta_set.clone())
            .bind(p.meta)
            .bind(p.version);
        self.fenced(q, p.lease).await
    }

    async fn job_release(&self, lease: &Lease) -> Result<u64, sqlx::Error> {
        self.fenced(sqlx::query(self.sql.job_release.clone()), lease)
            .await
    }

    async fn job_extend(
        &self,
        lease: &Lease,
        by: Duration,
    ) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let now: Option<DateTime<Utc>> = sqlx::query_scalar(self.sql.job_extend_lock.clone())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(now) = now else {
            tx.rollback().await?;
            return Ok(None);
        };
        let expires_at = now + chrono_micros(by);
        let done = sqlx::query(self.sql.job_extend.clone())
            .bind(expires_at)
            .bind(now)
            .bind(lease.job_id.0)
            .bind(lease.token)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((done.rows_affected() == 1).then_some(expires_at))
    }

    async fn job_state(
        &self,
        target: Target<'_, MySqlConnection>,
        id: JobId,
    ) -> Result<Option<JobState>, sqlx::Error> {
        let row = match target {
            Target::Pool => {
                sqlx::query(self.sql.job_state.clone())
                    .bind(id.0)
                    .fetch_optional(&self.pool)
                    .await?
            }
            Target::Tx(conn) => {
                sqlx::query(self.sql.job_state_locked.clone())
                    .bind(id.0)
                    .fetch_optional(conn)
                    .await?
            }
        };
        row.map(|r| parse_state(&text(&r, "state")?)).transpose()
    }

    async fn job_expired(&self, limit: usize) -> Result<Vec<Expired>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_expired.clone())
            .bind(limit as u64)
            .fetch_all(&self.pool)
            .await?;
        let mut expired = Vec::with_capacity(rows.len());
        for r in &rows {
            if let Some(token) = r.try_get::<Option<Uuid>, _>("lease_token")? {
                expired.push(Expired {
                    id: JobId(r.try_get("id")?),
                    token,
                    queue: text(r, "queue")?,
                    attempts: r.try_get("attempts")?,
                    max_attempts: r.try_get("max_attempts")?,
                });
            }
        }
        Ok(expired)
    }

    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64, sqlx::Error> {
        let mut total = 0;
        for chunk in p.jobs.chunks(PAIR_CHUNK) {
            let mut q = sqlx::query(self.sql.job_rescue(chunk.len()))
                .bind(p.dead)
                .bind(p.dead)
                .bind(p.error)
                .bind(p.errors_kept)
                .bind(p.error)
                .bind(p.dead)
                .bind(p.dead);
            for (id, _) in chunk {
                q = q.bind(id.0);
            }
            for (id, token) in chunk {
                q = q.bind(id.0).bind(*token);
            }
            total += q.execute(&self.pool).await?.rows_affected();
        }
        Ok(total)
    }

    async fn job_cancel(&self, id: JobId) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.job_cancel.clone())
            .bind(id.0)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_retry(
        &self,
        conn: &mut MySqlConnection,
        id: JobId,
    ) -> Result<Option<String>, sqlx::Error> {
        let done = sqlx::query(self.sql.job_retry.clone())
            .bind(id.0)
            .execute(&mut *conn)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        let row = sqlx::query(self.sql.job_retry_queue.clone())
            .bind(id.0)
            .fetch_optional(&mut *conn)
            .await?;
        row.map(|r| text(&r, "queue")).transpose()
    }

    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>, sqlx::Error> {
        let delay = p.delay.map(micros);
        let done = sqlx::query(self.sql.job_reschedule.clone())
            .bind(delay)
            .bind(delay)
            .bind(p.priority)
            .bind(p.id.0)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        let row = sqlx::query(self.sql.job_reschedule_queue.clone())
            .bind(p.id.0)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| text(&r, "queue")).transpose()
    }

    async fn job_get(&self, id: JobId) -> Result<Option<Job>, sqlx::Error> {
        sqlx::query(self.sql.job_get.clone())
            .bind(id.0)
            .fetch_optional(&self.pool)
            .await?
            .map(|r| job_from_row(&r))
            .transpose()
    }

    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>, sqlx::Error> {
        let state = req.state.map(|s| s.as_str());
        let before = req.before.map(|id| id.0);
        sqlx::query(self.sql.job_list.clone())
            .bind(req.queue.as_deref())
            .bind(req.queue.as_deref())
            .bind(state)
            .bind(state)
            .bind(req.kind.as_deref())
            .bind(req.kind.as_deref())
            .bind(before)
            .bind(before)
            .bind(req.limit as u64)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(job_from_row)
            .collect()
    }

    /// The queues (a loose index scan), then their counts in chunks of one UNION ALL each.
    async fn job_stats(
        &self,
        queue: Option<&str>,
        cap: Option<u64>,
    ) -> Result<Vec<QueueStats>, sqlx::Error> {
        let queues: Vec<String> = sqlx::query_scalar(self.sql.job_stats_queues.clone())
            .bind(queue)
            .bind(queue)
            .fetch_all(&self.pool)
            .await?;
        let cap = cap.map_or(i64::MAX, |c| i64::try_from(c).unwrap_or(i64::MAX));
        let count = |r: &MySqlRow, c: &str| -> Result<u64, sqlx::Error> {
            r.try_get::<i64, _>(c).map(|v| v.max(0) as u64)
        };
        let mut stats = Vec::with_capacity(queues.len());
        for chunk in queues.chunks(STATS_QUEUES) {
            let mut q = sqlx::query(self.sql.job_stats(chunk.len()));
            for name in chunk {
                q = q
                    .bind(name)
                    .bind(name)
                    .bind(name)
                    .bind(name)
                    .bind(name)
                    .bind(name);
                for _ in 0..3 {
                    q = q.bind(name).bind(cap);
                }
            }
            for r in q.fetch_all(&self.pool).await? {
                stats.push(QueueStats {
                    queue: text(&r, "queue")?,
                    waiting: count(&r, "waiting")?,
                    available: count(&r, "available")?,
                    scheduled: count(&r, "scheduled")?,
                    running: count(&r, "running")?,
                    oldest_due: r.try_get("oldest_due")?,
                    completed: count(&r, "completed")?,
                    dead: count(&r, "dead")?,
                    cancelled: count(&r, "cancelled")?,
                    ..QueueStats::default()
                });
            }
        }
        stats.sort_by(|a, b| a.queue.cmp(&b.queue));
        Ok(stats)
    }

    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(self.sql.job_prune(p.states.len()));
        for s in p.states {
            q = q.bind(s.as_str());
        }
        let done = q
            .bind(micros(p.older_than))
            .bind(p.queue)
            .bind(p.queue)
            .bind(p.limit as u64)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let q = bind_match(sqlx::query(self.sql.job_ids(m.states.len())), &m)
            .bind(m.before.map(|id| id.0))
            .bind(m.before.map(|id| id.0))
            .bind(m.limit as u64);
        let rows = q.fetch_all(&self.pool).await?;
        rows.iter()
            .map(|r| Ok((JobId(r.try_get("id")?), text(r, "queue")?)))
            .collect()
    }

    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let row = bind_match(sqlx::query(self.sql.job_count(m.states.len())), &m)
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get::<i64, _>(0)?.max(0) as u64)
    }

    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(self.sql.job_cancel_many(ids.len()));
        for id in ids {
            q = q.bind(id.0);
        }
        Ok(q.execute(&self.pool).await?.rows_affected())
    }

    async fn job_retry_many(
        &self,
        conn: &mut MySqlConnection,
        ids: &[JobId],
    ) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(self.sql.job_retry_many(ids.len()));
        for id in ids {
            q = q.bind(id.0);
        }
        Ok(q.execute(conn).await?.rows_affected())
    }

    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in sorted_ids(ids).chunks(ID_CHUNK) {
            let mut q = sqlx::query_scalar::<_, Uuid>(self.sql.job_workflows(chunk.len()));
            for id in chunk {
                q = q.bind(*id);
            }
            out.extend(q.fetch_all(&self.pool).await?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out.into_iter().map(WorkflowId).collect())
    }

    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(self.sql.job_dependents_count(m.states.len()));
        for s in m.states {
            q = q.bind(s.as_str());
        }
        let age = m.older_than.map(micros);
        let row = q
            .bind(m.queue)
            .bind(m.queue)
            .bind(m.kind)
            .bind(m.kind)
            .bind(age)
            .bind(age)
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get::<i64, _>(0)?.max(0) as u64)
    }

    async fn job_delete_many(
        &self,
        ids: &[JobId],
        states: &[JobState],
    ) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(self.sql.job_delete_many(ids.len(), states.len()));
        for id in ids {
            q = q.bind(id.0);
        }
        for s in states {
            q = q.bind(s.as_str());
        }
        Ok(q.execute(&self.pool).await?.rows_affected())
    }

    async fn maintenance_claim(
        &self,
        task: &str,
        token: Uuid,
        lease: Duration,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(self.sql.maintenance_claim.clone())
            .bind(token)
            .bind(micros(lease))
            .bind(task)
            .bind(token)
            .execute(&self.pool)
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
            .bind(micros(next_in))
            .bind(task)
            .bind(token)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    // Periodic jobs (schedules).

    type Tx = Transaction<'static, MySql>;

    /// A READ COMMITTED transaction (the pool's sessions are set to it).
    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_control_get.clone())
            .bind(queue)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(control).transpose()
    }

    async fn queue_control_lock(
        &self,
        conn: &mut MySqlConnection,
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
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(control).collect()
    }

    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_paused.clone())
            .bind(queue)
            .bind(paused)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_limit.clone())
            .bind(queue)
            .bind(limit)
            .execute(&self.pool)
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
            .bind(rate.map(|(n, _)| n))
            .bind(rate.map(|(_, period)| period))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn queue_rate_state(
        &self,
        conn: &mut MySqlConnection,
        queue: &str,
    ) -> Result<RateState, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_rate_state.clone())
            .bind(queue)
            .fetch_one(conn)
            .await?;
        let count: i32 = row.try_get("rate_count")?;
        Ok(RateState {
            window: row.try_get("rate_window")?,
            count: u32::try_from(count).unwrap_or(0),
            now_us: row.try_get("now_us")?,
        })
    }

    async fn queue_rate_record(
        &self,
        conn: &mut MySqlConnection,
        queue: &str,
        window: i64,
        count: u32,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_rate_record.clone())
            .bind(window)
            .bind(count)
            .bind(queue)
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
            .bind(limit)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn queue_set_key_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(self.sql.queue_set_key_rate.clone())
            .bind(queue)
            .bind(rate.map(|(n, _)| n))
            .bind(rate.map(|(_, period)| period))
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
        conn: &mut MySqlConnection,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>, sqlx::Error> {
        let row: Option<(i64, i32)> = sqlx::query_as(self.sql.queue_key_rate_get.clone())
            .bind(queue)
            .bind(key.as_bytes())
            .fetch_optional(conn)
            .await?;
        Ok(row.map(|(w, n)| (w, u32::try_from(n).unwrap_or(0))))
    }

    async fn queue_key_rate_put(
        &self,
        conn: &mut MySqlConnection,
        queue: &str,
        key: &str,
        window: i64,
        count: u32,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_key_rate_put.clone())
            .bind(queue)
            .bind(key.as_bytes())
            .bind(window)
            .bind(count)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_set_fair.clone())
            .bind(queue)
            .bind(on)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn queue_key_cursor(
        &self,
        conn: &mut MySqlConnection,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_key_cursor.clone())
            .bind(cursor.map(str::as_bytes))
            .bind(queue)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn job_key_leases(
        &self,
        target: Target<'_, MySqlConnection>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>, sqlx::Error> {
        let q = sqlx::query_as::<_, (Vec<u8>, i64)>(self.sql.job_key_leases.clone()).bind(queue);
        let rows = match target {
            Target::Pool => q.fetch_all(&self.pool).await?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        rows.into_iter()
            .map(|(key, n)| Ok((key_text(key)?, u64::try_from(n).unwrap_or(0))))
            .collect()
    }

    async fn job_key_next(
        &self,
        conn: &mut MySqlConnection,
        queue: &str,
        after: &str,
        n: usize,
    ) -> Result<Vec<String>, sqlx::Error> {
        let mut keys = Vec::with_capacity(n);
        let mut after = after.as_bytes().to_vec();
        while keys.len() < n {
            let next: Option<Vec<u8>> = sqlx::query_scalar(self.sql.job_key_next.clone())
                .bind(queue)
                .bind(&after)
                .fetch_one(&mut *conn)
                .await?;
            let Some(next) = next else { break };
            keys.push(key_text(next.clone())?);
            after = next;
        }
        Ok(keys)
    }

    /// `job_claim_key` (or `job_claim_unkeyed`) locks the key's due jobs, then
    /// `job_claim_update` leases them, as `job_claim_in` does, in the controlled claim's
    /// transaction.
    async fn job_claim_key(
        &self,
        conn: &mut MySqlConnection,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let q = match key {
            Some(key) => sqlx::query(self.sql.job_claim_key.clone())
                .bind(p.queue)
                .bind(key.as_bytes()),
            None => sqlx::query(self.sql.job_claim_unkeyed.clone()).bind(p.queue),
        };
        let rows = q.bind(p.limit as u64).fetch_all(&mut *conn).await?;
        self.lease_locked(conn, &rows, p).await
    }

    /// Each key's jobs locked by `job_claim_key` in turn, then all of them leased by one
    /// `job_claim_update` (a claim at a key limit of 1 takes one job of each of many keys).
    async fn job_claim_keys(
        &self,
        conn: &mut MySqlConnection,
        p: JobClaim<'_>,
        keys: &[(String, usize)],
    ) -> Result<Vec<Vec<Leased>>, sqlx::Error> {
        let mut rows = Vec::new();
        let mut counts = Vec::with_capacity(keys.len());
        for (key, n) in keys {
            let locked = sqlx::query(self.sql.job_claim_key.clone())
                .bind(p.queue)
                .bind(key.as_bytes())
                .bind(*n as u64)
                .fetch_all(&mut *conn)
                .await?;
            counts.push(locked.len());
            rows.extend(locked);
        }
        let mut leased = self.lease_locked(conn, &rows, p).await?.into_iter();
        Ok(counts
            .into_iter()
            .map(|n| leased.by_ref().take(n).collect())
            .collect())
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
            .bind(limit as u64)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64, sqlx::Error> {
        let n: i64 = sqlx::query_scalar(self.sql.job_key_waiting.clone())
            .bind(queue)
            .bind(key.as_bytes())
            .fetch_one(&self.pool)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn job_live_leases(
        &self,
        conn: &mut MySqlConnection,
        queue: &str,
    ) -> Result<u64, sqlx::Error> {
        let n: i64 = sqlx::query_scalar(self.sql.job_live_leases.clone())
            .bind(queue)
            .fetch_one(conn)
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn tx_begin(&self) -> Result<Self::Tx, sqlx::Error> {
        self.pool.begin().await
    }

    fn tx_conn(tx: &mut Self::Tx) -> &mut MySqlConnection {
        tx
    }

    async fn tx_commit(&self, tx: Self::Tx) -> Result<(), sqlx::Error> {
        tx.commit().await
    }

    async fn tx_rollback(&self, tx: Self::Tx) -> Result<(), sqlx::Error> {
        tx.rollback().await
    }

    type Savepoint<'c> = Transaction<'c, MySql>;

    async fn savepoint<'c>(
        &self,
        conn: &'c mut MySqlConnection,
    ) -> Result<Transaction<'c, MySql>, sqlx::Error> {
        conn.begin().await
    }

    async fn savepoint_release(
        &self,
        savepoint: Transaction<'_, MySql>,
    ) -> Result<(), sqlx::Error> {
        savepoint.commit().await
    }

    async fn savepoint_rollback(
        &self,
        savepoint: Transaction<'_, MySql>,
    ) -> Result<(), sqlx::Error> {
        savepoint.rollback().await
    }

    async fn schedule_get(&self, name: &str) -> Result<Option<StoredSchedule>, sqlx::Error> {
        let row = sqlx::query(self.sql.schedule_get.clone())
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_list(&self) -> Result<Vec<StoredSchedule>, sqlx::Error> {
        let rows = sqlx::query(self.sql.schedule_list.clone())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn schedule_insert(&self, s: &StoredSchedule) -> Result<(), sqlx::Error> {
        let q = sqlx::query(self.sql.schedule_insert.clone()).bind(&s.name);
        bind_definition(q, s)
            .bind(s.created_at)
            .bind(s.updated_at)
            .bind(&s.kind)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn schedule_update(&self, s: &StoredSchedule, version: i64) -> Result<u64, sqlx::Error> {
        let done = bind_definition(sqlx::query(self.sql.schedule_update.clone()), s)
            .bind(s.updated_at)
            .bind(&s.kind)
            .bind(&s.name)
            .bind(version)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn schedule_touch(
        &self,
        name: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.schedule_touch.clone())
            .bind(expires_at)
            .bind(expires_at)
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn schedule_advance(
        &self,
        target: Target<'_, MySqlConnection>,
        p: ScheduleAdvance<'_>,
    ) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.schedule_advance.clone())
            .bind(p.last_slot)
            .bind(p.last_job.0)
            .bind(p.now)
            .bind(p.name)
            .bind(p.version);
        let done = match target {
            Target::Pool => q.execute(&self.pool).await?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn schedule_delete(&self, name: &str, version: i64) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.schedule_delete.clone())
            .bind(name)
            .bind(version)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    // Workflows.

    async fn workflow_insert(
        &self,
        conn: &mut MySqlConnection,
        w: WorkflowInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.workflow_insert.clone())
            .bind(w.id.0)
            .bind(w.name)
            .bind(w.open)
            .bind(w.callback.map(|j| j.0))
            .execute(conn)
            .await?;
        Ok(())
    }

    /// Multi-row INSERTs of at most `ID_CHUNK` rows and about half of `max_allowed_packet`
    /// each, on the engine's transaction.
    async fn workflow_steps_insert(
        &self,
        conn: &mut MySqlConnection,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<(), sqlx::Error> {
        let budget = (self.server.max_packet / 2).max(1 << 20) as usize;
        let mut start = 0;
        while start < steps.len() {
            let mut end = start;
            let mut bytes = 0;
            while end < steps.len() && end - start < ID_CHUNK {
                let size = steps[end].1.len() + 64;
                if end > start && bytes + size > budget {
                    break;
                }
                bytes += size;
                end += 1;
            }
            let mut q = sqlx::query(self.sql.workflow_steps_insert(end - start));
            for (job, step) in &steps[start..end] {
                q = q.bind(workflow.0).bind(job.0).bind(*step);
            }
            q.execute(&mut *conn).await?;
            start = end;
        }
        Ok(())
    }

    /// Multi-row INSERTs of at most `ID_CHUNK` rows each, on the engine's transaction.
    async fn workflow_deps_insert(
        &self,
        conn: &mut MySqlConnection,
        edges: &[WorkflowEdge],
    ) -> Result<(), sqlx::Error> {
        for chunk in edges.chunks(ID_CHUNK) {
            let mut q = sqlx::query(self.sql.workflow_deps_insert(chunk.len()));
            for e in chunk {
                q = q.bind(e.dep.0).bind(e.job.0).bind(e.policy.code());
            }
            q.execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn workflow_lock(
        &self,
        conn: &mut MySqlConnection,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        sqlx::query(self.sql.workflow_lock.clone())
            .bind(id.0)
            .fetch_optional(conn)
            .await?
            .as_ref()
            .map(workflow_from_row)
            .transpose()
    }

    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.workflow_seal.clone())
            .bind(id.0)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn workflow_dependents(
        &self,
        target: Target<'_, MySqlConnection>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let mut pooled;
        let conn: &mut MySqlConnection = match target {
            Target::Pool => {
                pooled = self.pool.acquire().await?;
                &mut pooled
            }
            Target::Tx(conn) => conn,
        };
        let mut dependents = Vec::new();
        for chunk in sorted_ids(finished).chunks(ID_CHUNK) {
            let mut q = sqlx::query_scalar::<_, Uuid>(self.sql.workflow_dependents(chunk.len()));
            for id in chunk {
                q = q.bind(*id);
            }
            dependents.extend(q.fetch_all(&mut *conn).await?);
        }
        // Each chunk's are distinct; a job depending on finished jobs of two chunks is in both.
        dependents.sort_unstable();
        dependents.dedup();
        Ok(dependents.into_iter().map(JobId).collect())
    }

    /// In a transaction of the driver's (READ COMMITTED), or on the caller's: the locking
    /// SELECT, then the UPDATE by ids with the state checked again (see
    /// `queries/workflow_block.sql`).
    async fn workflow_block(
        &self,
        target: Target<'_, MySqlConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        match target {
            Target::Pool => {
                let mut tx = self.pool.begin().await?;
                let cancelled = self.block_on(&mut tx, waiting, true).await?;
                tx.commit().await?;
                Ok(cancelled)
            }
            Target::Tx(conn) => self.block_on(conn, waiting, false).await,
        }
    }

    /// As `workflow_block`: every row is read by a locking read, so the decision is made from
    /// the latest committed states whatever the isolation level (see
    /// `queries/workflow_promote.sql`).
    async fn workflow_promote(
        &self,
        target: Target<'_, MySqlConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        match target {
            Target::Pool => {
                let mut tx = self.pool.begin().await?;
                let promoted = self.promote_on(&mut tx, waiting, true).await?;
                tx.commit().await?;
                Ok(promoted)
            }
            Target::Tx(conn) => self.promote_on(conn, waiting, false).await,
        }
    }

    /// In the retry's transaction: the locking SELECT of the jobs the retried ones blocked,
    /// then the UPDATE of exactly those.
    async fn workflow_reopen(
        &self,
        conn: &mut MySqlConnection,
        retried: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let mut reopened = Vec::new();
        for chunk in sorted_ids(retried).chunks(ID_CHUNK) {
            let mut q = sqlx::query_scalar::<_, Uuid>(self.sql.workflow_reopen(chunk.len()));
            for id in chunk {
                q = q.bind(*id);
            }
            let mut blocked = q.fetch_all(&mut *conn).await?;
            if blocked.is_empty() {
                continue;
            }
            blocked.sort_unstable();
            let mut q = sqlx::query(self.sql.workflow_reopen_update(blocked.len()));
            for id in &blocked {
                q = q.bind(*id);
            }
            let done = q.execute(&mut *conn).await?;
            check_locked("workflow_reopen", done.rows_affected(), blocked.len())?;
            reopened.extend(blocked.into_iter().map(JobId));
        }
        Ok(reopened)
    }

    async fn workflow_blocked(
        &self,
        conn: &mut MySqlConnection,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in sorted_ids(ids).chunks(ID_CHUNK) {
            let mut q = sqlx::query(self.sql.workflow_blocked(chunk.len()));
            for id in chunk {
                q = q.bind(*id);
            }
            for r in q.fetch_all(&mut *conn).await? {
                out.push((JobId(r.try_get("id")?), JobId(r.try_get("blocked_by")?)));
            }
        }
        Ok(out)
    }

    async fn workflow_waiting(
        &self,
        after: Option<JobId>,
        limit: usize,
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let after = after.map(|id| id.0);
        let ids: Vec<Uuid> = sqlx::query_scalar(self.sql.workflow_waiting.clone())
            .bind(after)
            .bind(after)
            .bind(limit as u64)
            .fetch_all(&self.pool)
            .await?;
        Ok(ids.into_iter().map(JobId).collect())
    }

    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        sqlx::query(self.sql.workflow_get.clone())
            .bind(id.0)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(workflow_from_row)
            .transpose()
    }

    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>, sqlx::Error> {
        sqlx::query(self.sql.workflow_jobs.clone())
            .bind(id.0)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(job_from_row)
            .collect()
    }

    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>, sqlx::Error> {
        sqlx::query(self.sql.workflow_edges.clone())
            .bind(id.0)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| {
                Ok(WorkflowEdge {
                    job: JobId(r.try_get("job_id")?),
                    dep: JobId(r.try_get("dep_id")?),
                    policy: DepPolicy::from_code(r.try_get::<i16, _>("policy")?.into()),
                })
            })
            .collect()
    }

    /// One row per workflow and state, newest workflow first: consecutive rows of one
    /// workflow make its counts.
    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>, sqlx::Error> {
        let before = before.map(|w| w.0);
        let rows = sqlx::query(self.sql.workflow_list.clone())
            .bind(before)
            .bind(before)
            .bind(limit as u64)
            .fetch_all(&self.pool)
            .await?;
        let mut out: Vec<(StoredWorkflow, Vec<(JobState, u64)>)> = Vec::new();
        for r in &rows {
            let id = WorkflowId(r.try_get("id")?);
            if out.last().is_none_or(|(w, _)| w.id != id) {
                out.push((workflow_from_row(r)?, Vec::new()));
            }
            if let Some(state) = opt_text(r, "state")? {
                let n = r.try_get::<i64, _>("jobs")?.max(0) as u64;
                if let Some((_, counts)) = out.last_mut() {
                    counts.push((parse_state(&state)?, n));
                }
            }
        }
        Ok(out)
    }

    async fn workflow_prune_lock(
        &self,
        conn: &mut MySqlConnection,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>, sqlx::Error> {
        // Before the first page: before every workflow (none is created at the epoch with
        // the nil id).
        let (at, id) = p
            .after
            .map_or((DateTime::<Utc>::UNIX_EPOCH, Uuid::nil()), |(at, id)| {
                (at, id.0)
            });
        let rows = sqlx::query(self.sql.workflow_prune_lock(self.skip_locked))
            .bind(micros(p.older_than))
            .bind(at)
            .bind(at)
            .bind(id)
            .bind(p.limit as u64)
            .fetch_all(conn)
            .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    WorkflowId(r.try_get("id")?),
                    r.try_get::<DateTime<Utc>, _>("created_at")?,
                ))
            })
            .collect()
    }

    /// Five statements in the caller's transaction: the ids that qualify (a plain read, after
    /// the locks), then the dependencies of their jobs, their jobs, their step rows and the
    /// workflows' rows, each over the ids in chunks of `ID_CHUNK`.
    async fn workflow_prune(
        &self,
        conn: &mut MySqlConnection,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned, sqlx::Error> {
        let ages = [
            p.completed.map(micros),
            p.dead.map(micros),
            p.cancelled.map(micros),
        ];
        let mut done = WorkflowPruned::default();
        let ids: Vec<Uuid> = p.ids.iter().map(|w| w.0).collect();
        for chunk in ids.chunks(ID_CHUNK) {
            let mut q = sqlx::query_scalar::<_, Uuid>(self.sql.workflow_prune(chunk.len()));
            for id in chunk {
                q = q.bind(*id);
            }
            for age in ages {
                q = q.bind(age);
            }
            let doomed = q.fetch_all(&mut *conn).await?;
            if doomed.is_empty() {
                continue;
            }
            let over_ids = |statement| {
                let mut q = sqlx::query(statement);
                for id in &doomed {
                    q = q.bind(*id);
                }
                q
            };
            over_ids(self.sql.workflow_prune_deps(doomed.len()))
                .execute(&mut *conn)
                .await?;
            done.jobs += over_ids(self.sql.workflow_prune_jobs(doomed.len()))
                .execute(&mut *conn)
                .await?
                .rows_affected();
            over_ids(self.sql.workflow_prune_steps(doomed.len()))
                .execute(&mut *conn)
                .await?;
            done.workflows += over_ids(self.sql.workflow_prune_rows(doomed.len()))
                .execute(&mut *conn)
                .await?
                .rows_affected();
        }
        Ok(done)
    }

    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>, sqlx::Error> {
        sqlx::query(self.sql.job_deps.clone())
            .bind(id.0)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| {
                Ok(Dependency {
                    id: JobId(r.try_get("dep_id")?),
                    step: opt_text(r, "step")?.unwrap_or_default(),
                    policy: DepPolicy::from_code(r.try_get::<i16, _>("policy")?.into()),
                    state: opt_text(r, "state")?
                        .as_deref()
                        .map(parse_state)
                        .transpose()?,
                    output: json_column(r, "output")?,
                })
            })
            .collect()
    }
}
