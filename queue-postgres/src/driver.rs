//! [`PgDriver`]: the PostgreSQL statements behind the engine.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::statements::load;
use queue_core::engine::{
    micros, rate_limit_of, Driver, DriverFault, Expired, JobClaim, JobComplete, JobFailDead,
    JobFailRetry, JobInsert, JobInsertUnique, JobMatch, JobMetaSet, JobPrune, JobReschedule,
    JobRescue, JobSnooze, JobUniqueReplace, Migration, RateState, ScheduleAdvance, StoredMeta,
    StoredSchedule, StoredWorkflow, Target, UniqueInsert, WorkflowEdge, WorkflowInsert,
    WorkflowPrune, WorkflowPruneLock, WorkflowPruned,
};
use queue_core::workflow::{DepPolicy, Dependency, WorkflowId};
use queue_core::{
    EngineProfile, Job, JobId, JobState, Lease, Leased, ListRequest, QueueControl, QueueStats,
    WakeHub,
};
use serde_json::value::RawValue;
use sqlx::postgres::{PgConnection, PgRow};
use sqlx::types::Json;
use sqlx::{Acquire, PgPool, Postgres, Row, Transaction};
use uuid::Uuid;

use crate::copy::copy_rows;
use crate::listen::{Listener, Probe};
use crate::migrate::MIGRATIONS;
use crate::nodes::Nodes;
use crate::pinned::on_pool;
use crate::sql::Statements;

/// Most rows one `INSERT ... SELECT FROM UNNEST` carries; larger batches are split into several
/// statements, which the engine runs inside one transaction (or savepoint).
const INSERT_CHUNK: usize = 5_000;
/// Batches of at least this many jobs, all due at once, are written with one binary COPY.
const COPY_FROM: usize = 64;

/// The PostgreSQL driver behind [`crate::PostgresQueue`]: a pool, the schema's statements, and the
/// LISTEN task. Reached through [`queue_core::Backend::engine`]; its statements are its only
/// logic.
#[derive(Debug)]
pub struct PgDriver {
    pub(crate) pool: PgPool,
    /// The LISTEN connection's own pool, so waiting never takes a connection the queue needs.
    pub(crate) listen_pool: PgPool,
    pub(crate) schema: String,
    pub(crate) channel: String,
    pub(crate) sql: Statements,
    pub(crate) listener: Listener,
    /// Whether `watch` starts the LISTEN task (off in poll-only mode).
    pub(crate) listen: bool,
    /// The hosts of the URL and the connections' retirement (see `nodes`).
    pub(crate) nodes: Nodes,
    /// What the engine can do: chooses the claim inside a controlled transaction, the
    /// migration lock (see `builder`).
    pub(crate) profile: EngineProfile,
    /// Behind a pooler in transaction mode: each statement outside a transaction gets one of
    /// its own (see `pinned`).
    pub(crate) pinned: bool,
    /// Whether the hint that a pooler in transaction mode seems to be in the way was logged.
    pub(crate) pooler_hint: std::sync::Once,
    /// What each new connection gets; says whether they have Nagle's algorithm off, which
    /// `COPY` needs.
    pub(crate) setup: std::sync::Arc<crate::nodes::Setup>,
}

fn decode(what: String) -> sqlx::Error {
    sqlx::Error::Decode(what.into())
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn unsigned(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

pub(crate) fn signed(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `n` lease tokens made here (random, 122 bits), for the claims that do not make them in the
/// statement.
fn tokens(n: usize) -> Vec<Uuid> {
    (0..n).map(|_| Uuid::new_v4()).collect()
}

fn parse_state(s: &str) -> Result<JobState, sqlx::Error> {
    s.parse()
        .map_err(|_| decode(format!("unknown job state {s:?} in the jobs table")))
}

/// A job row as returned by `RETURNING j.id, ...` / `SELECT j.id, ...`, with its lease token
/// (its step and dependencies are read by `job_get`, `workflow_jobs` and `job_deps` only).
fn job_from_row(row: &PgRow) -> Result<(Job, Option<Uuid>), sqlx::Error> {
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
fn job_detail_from_row(row: &PgRow) -> Result<Job, sqlx::Error> {
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
fn schedule_from_row(row: &PgRow) -> Result<StoredSchedule, sqlx::Error> {
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
fn workflow_from_row(row: &PgRow) -> Result<StoredWorkflow, sqlx::Error> {
    Ok(StoredWorkflow {
        id: WorkflowId(row.try_get("id")?),
        name: row.try_get("name")?,
        open: row.try_get("open")?,
        callback: row.try_get::<Option<Uuid>, _>("callback")?.map(JobId),
        created_at: row.try_get("created_at")?,
    })
}

/// `schedule_insert` and `schedule_update` bind the same 15 columns first.
fn bind_schedule<'q>(
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
fn leased<'r>(rows: impl IntoIterator<Item = &'r PgRow>) -> Result<Vec<Leased>, sqlx::Error> {
    rows.into_iter()
        .map(|row| {
            let (job, token) = job_from_row(row)?;
            let token = token
                .ok_or_else(|| decode(format!("claimed job {} has no lease token", job.id)))?;
            Leased::from_claimed(job, token).map_err(|e| decode(e.to_string()))
        })
        .collect()
}

impl PgDriver {
    /// Whether statements are prepared by name and kept on the connection (not behind a pooler
    /// in transaction mode, whose server connections other clients share: see `pinned`).
    fn named(&self) -> bool {
        !self.pinned
    }

    /// The queues a write should NOTIFY: `queues`, or none once this process's LISTEN was
    /// found deaf. A deaf LISTEN means a pooler in transaction mode is in the way; the LISTEN
    /// then stays on one of the pooler's server connections, and every NOTIFY would reach
    /// whichever client holds that connection in the middle of its statement (which sqlx
    /// fails), while waking no one.
    fn wakes<'a>(&self, queues: &'a [&'a str]) -> &'a [&'a str] {
        if self.listener.is_deaf() {
            &[]
        } else {
            queues
        }
    }

    /// `job_claim` with its values bound.
    fn claim_query(
        &self,
        p: JobClaim<'_>,
    ) -> sqlx::query::Query<'_, Postgres, sqlx::postgres::PgArguments> {
        sqlx::query(self.sql.job_claim.clone())
            .persistent(self.named())
            .bind(p.queue)
            .bind(limit(p.limit))
            .bind(micros(p.lease))
            .bind(p.worker)
            .bind(p.controls_checked)
    }

    /// Whether `p` is written with one binary COPY: a large batch, all due now, on connections
    /// with Nagle's algorithm off.
    fn copies(&self, p: JobInsert<'_>) -> bool {
        p.jobs.len() >= COPY_FROM
            && p.delays.iter().all(Duration::is_zero)
            && self.setup.nodelay.copy_ok()
    }

    /// Writes `p.jobs` on `conn`: with one COPY when [`PgDriver::copies`], else in chunks.
    async fn write_jobs(
        &self,
        conn: &mut PgConnection,
        p: JobInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        if self.copies(p) {
            self.copy_jobs(conn, p).await
        } else {
            self.insert_chunks(conn, p).await
        }
    }

    /// Writes `p.jobs` (all due now) with one COPY, then sends their wake-ups on the same
    /// connection: inside the caller's transaction they are delivered at its commit; in
    /// autocommit after the rows are committed.
    async fn copy_jobs(
        &self,
        conn: &mut PgConnection,
        p: JobInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        // Steps of a workflow carry their state and workflow; jobs pushed alone take the
        // columns' defaults (pending, none) and send no more than before.
        let workflow = p.jobs.iter().any(|j| j.workflow_slot().is_some());
        let statement = if workflow {
            &self.sql.job_insert_copy_workflow
        } else {
            &self.sql.job_insert_copy
        };
        let mut copy = conn.copy_in_raw(statement.as_str()).await?;
        copy.send(copy_rows(p.jobs, workflow)).await?;
        copy.finish().await?;
        let notify = self.wakes(p.notify);
        if !notify.is_empty() {
            sqlx::query(self.sql.notify.clone())
                .persistent(self.named())
                .bind(&self.channel)
                .bind(notify)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    /// Inserts `p.jobs` on `conn` with one statement per chunk; the first also notifies.
    async fn insert_chunks(
        &self,
        conn: &mut PgConnection,
        p: JobInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        for (i, chunk) in p.jobs.chunks(INSERT_CHUNK).enumerate() {
            let start = i * INSERT_CHUNK;
            let delays = &p.delays[start..start + chunk.len()];
            let notify: &[&str] = if i == 0 { self.wakes(p.notify) } else { &[] };
            let mut ids = Vec::with_capacity(chunk.len());
            let mut queues = Vec::with_capacity(chunk.len());
            let mut payloads = Vec::with_capacity(chunk.len());
            let mut priorities = Vec::with_capacity(chunk.len());
            let mut max_attempts = Vec::with_capacity(chunk.len());
            let mut delays_us = Vec::with_capacity(chunk.len());
            let mut dedup_keys = Vec::with_capacity(chunk.len());
            let mut kinds = Vec::with_capacity(chunk.len());
            let mut metas = Vec::with_capacity(chunk.len());
            let mut timeouts = Vec::with_capacity(chunk.len());
            let mut keys = Vec::with_capacity(chunk.len());
            // Empty for a chunk of jobs pushed alone (the statement reads the missing elements
            // as pending and no workflow), so that those cost no more than before.
            let workflow = chunk.iter().any(|j| j.workflow_slot().is_some());
            let steps = if workflow { chunk.len() } else { 0 };
            let mut states = Vec::with_capacity(steps);
            let mut workflows = Vec::with_capacity(steps);
            for (job, delay) in chunk.iter().zip(delays) {
                ids.push(job.id().0);
                queues.push(job.queue());
                payloads.push(job.payload_json());
                priorities.push(job.priority_value());
                max_attempts.push(signed(job.max_attempts_value()));
                delays_us.push(micros(*delay));
                dedup_keys.push(job.dedup_key_value());
                kinds.push(job.kind_value());
                metas.push(job.meta_json());
                timeouts.push(job.timeout_value().map(micros));
                keys.push(job.concurrency_key_value());
                if workflow {
                    states.push(job.initial_state().as_str());
                    workflows.push(job.workflow_id().map(|w| w.0));
                }
            }
            // Without wake-ups to send, the statement has no pg_notify at all (poll-only mode and
            // engines without NOTIFY have none to call).
            let statement = if notify.is_empty() {
                self.sql.job_insert_plain.clone()
            } else {
                self.sql.job_insert.clone()
            };
            let mut query = sqlx::query(statement)
                .persistent(self.named())
                .bind(&ids)
                .bind(&queues)
                .bind(&payloads)
                .bind(&priorities)
                .bind(&max_attempts)
                .bind(&delays_us)
                .bind(&dedup_keys)
                .bind(&kinds)
                .bind(&metas)
                .bind(&timeouts);
            if !notify.is_empty() {
                query = query.bind(&self.channel).bind(notify);
            }
            query
                .bind(&keys)
                .bind(&states)
                .bind(&workflows)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    async fn complete_on(
        &self,
        conn: &mut PgConnection,
        p: JobComplete<'_>,
    ) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.job_complete.clone())
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(p.output)
            .bind(p.keep)
            .fetch_one(conn)
            .await?;
        Ok(count(done.try_get("completed")?))
    }
}

/// A row of `queue_control_*`.
fn control(row: &PgRow) -> Result<QueueControl, sqlx::Error> {
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

#[async_trait]
impl Driver for PgDriver {
    type Conn = PgConnection;
    type Error = sqlx::Error;
    type Candidate = (Uuid, i64);
    type Migrator = Transaction<'static, Postgres>;

    /// Also where an outage is noticed: a read-only or departing server retires every pooled
    /// connection, and a host list is walked again (see `nodes`).
    fn classify(&self, error: &sqlx::Error) -> DriverFault {
        let fault = crate::error::classify(error);
        if fault == DriverFault::Unavailable {
            self.nodes.unavailable(crate::error::wrong_node(error));
        }
        if !self.pinned && crate::error::lost_prepared_statement(error) {
            self.pooler_hint.call_once(|| {
                tracing::warn!(
                    target: crate::LOG_TARGET,
                    %error,
                    "a prepared statement was missing or already there: a pooler in transaction \
                     mode (PgBouncer) seems to sit between the queue and PostgreSQL; add \
                     pooler=transaction to the URL (or use session mode)"
                );
            });
        }
        fault
    }

    fn migrations(&self) -> &'static [Migration] {
        MIGRATIONS
    }

    async fn migration_lock(&self) -> Result<Self::Migrator, sqlx::Error> {
        if !self.profile.advisory_locks {
            return crate::migrate::lock_row(&self.pool, &self.sql, self.named()).await;
        }
        let mut tx = self.pool.begin().await?;
        sqlx::query(self.sql.migration_lock.clone())
            .persistent(self.named())
            .bind(format!("queue-migrate:{}", self.schema))
            .execute(&mut *tx)
            .await?;
        sqlx::raw_sql(self.sql.migration_table.clone())
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    async fn migration_applied(&self, m: &mut Self::Migrator) -> Result<Vec<i64>, sqlx::Error> {
        sqlx::query_scalar(self.sql.migration_applied.clone())
            .persistent(self.named())
            .fetch_all(&mut **m)
            .await
    }

    async fn migration_apply(
        &self,
        m: &mut Self::Migrator,
        migration: &Migration,
    ) -> Result<(), sqlx::Error> {
        // No bound values: sent as a simple query, which may hold several statements. The
        // file's text, with nothing spliced in but the validated schema name.
        let text = load(migration.sql, &[("{schema}", &self.schema)]);
        sqlx::raw_sql(sqlx::AssertSqlSafe(text))
            .execute(&mut **m)
            .await?;
        sqlx::query(self.sql.migration_record.clone())
            .persistent(self.named())
            .bind(migration.version)
            .bind(migration.name)
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
        on_pool!(self, |e| sqlx::query_scalar(self.sql.now.clone())
            .persistent(self.named())
            .fetch_one(e))
    }

    async fn job_insert(
        &self,
        target: Target<'_, PgConnection>,
        p: JobInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        match target {
            // One statement is atomic by itself (the engine wraps several in a transaction): no
            // BEGIN/COMMIT round trips, except behind a pooler in transaction mode, which needs
            // them to keep the statement on one server.
            Target::Pool if self.pinned => {
                let mut tx = self.pool.begin().await?;
                self.write_jobs(&mut tx, p).await?;
                tx.commit().await
            }
            Target::Pool => {
                let mut conn = self.pool.acquire().await?;
                self.write_jobs(&mut conn, p).await
            }
            Target::Tx(conn) => self.write_jobs(conn, p).await,
        }
    }

    /// One COPY, or one statement per 5,000 jobs.
    fn job_insert_statements(&self, p: JobInsert<'_>) -> usize {
        if self.copies(p) {
            1
        } else {
            p.jobs.len().div_ceil(INSERT_CHUNK)
        }
    }

    async fn job_insert_unique(
        &self,
        target: Target<'_, PgConnection>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert, sqlx::Error> {
        let job = p.job;
        let q = sqlx::query_as::<_, (Uuid, bool)>(self.sql.job_insert_unique.clone())
            .persistent(self.named())
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(signed(job.max_attempts_value()))
            .bind(micros(p.delay))
            .bind(job.dedup_key_value())
            .bind(job.kind_value())
            .bind(job.meta_json())
            .bind(job.timeout_value().map(micros))
            .bind(&p.key[..])
            .bind(p.states)
            .bind(job.concurrency_key_value());
        let row = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_optional(e))?,
            Target::Tx(conn) => q.fetch_optional(conn).await?,
        };
        Ok(match row {
            Some((_, true)) => UniqueInsert::Inserted,
            Some((holder, false)) => UniqueInsert::Held(JobId(holder)),
            None => UniqueInsert::Released,
        })
    }

    async fn job_unique_replace(
        &self,
        target: Target<'_, PgConnection>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.job_unique_replace.clone())
            .persistent(self.named())
            .bind(p.id.0)
            .bind(p.job.payload_json())
            .bind(p.job.priority_value())
            .bind(micros(p.delay));
        let done = match target {
            Target::Pool => on_pool!(self, |e| q.execute(e))?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>, sqlx::Error> {
        let holder: Option<Uuid> = on_pool!(self, |e| sqlx::query_scalar(
            self.sql.job_unique_holder.clone()
        )
        .persistent(self.named())
        .bind(id.0)
        .fetch_optional(e))?;
        Ok(holder.map(JobId))
    }

    async fn job_dedup_live(
        &self,
        target: Target<'_, PgConnection>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>, sqlx::Error> {
        let q = sqlx::query_as(self.sql.job_dedup_live.clone())
            .persistent(self.named())
            .bind(queues)
            .bind(keys);
        match target {
            Target::Pool => on_pool!(self, |e| q.fetch_all(e)),
            Target::Tx(conn) => q.fetch_all(conn).await,
        }
    }

    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>, sqlx::Error> {
        let rows = on_pool!(self, |e| self.claim_query(p).fetch_all(e))?;
        leased(&rows)
    }

    async fn job_claim_in(
        &self,
        conn: &mut PgConnection,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let rows = if self.profile.skip_locked && self.profile.volatile_in_update {
            self.claim_query(p).fetch_all(conn).await?
        } else {
            sqlx::query(self.sql.job_claim_versioned.clone())
                .persistent(self.named())
                .bind(p.queue)
                .bind(limit(p.limit))
                .bind(micros(p.lease))
                .bind(p.worker)
                .bind(p.controls_checked)
                .bind(tokens(p.limit))
                .fetch_all(conn)
                .await?
        };
        leased(&rows)
    }

    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<(Uuid, i64)>, sqlx::Error> {
        on_pool!(self, |e| sqlx::query_as(self.sql.job_candidates.clone())
            .persistent(self.named())
            .bind(p.queue)
            .bind(limit(p.limit))
            .fetch_all(e))
    }

    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        mut candidates: Vec<(Uuid, i64)>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        // Rows are updated (and locked) in the array's order: in id order, two claimers with
        // overlapping candidates take their locks in the same order and cannot deadlock.
        candidates.sort_unstable_by_key(|c| c.0);
        let (ids, versions): (Vec<Uuid>, Vec<i64>) = candidates.into_iter().unzip();
        let rows = on_pool!(self, |e| sqlx::query(self.sql.job_claim_candidates.clone())
            .persistent(self.named())
            .bind(&ids)
            .bind(&versions)
            .bind(micros(p.lease))
            .bind(p.worker)
            .bind(p.queue)
            .bind(tokens(ids.len()))
            .fetch_all(e))?;
        leased(&rows)
    }

    async fn job_complete(
        &self,
        target: Target<'_, PgConnection>,
        p: JobComplete<'_>,
    ) -> Result<u64, sqlx::Error> {
        match target {
            Target::Pool if self.pinned => {
                let mut tx = self.pool.begin().await?;
                let done = self.complete_on(&mut tx, p).await?;
                tx.commit().await?;
                Ok(done)
            }
            Target::Pool => {
                let mut conn = self.pool.acquire().await?;
                self.complete_on(&mut conn, p).await
            }
            Target::Tx(conn) => self.complete_on(conn, p).await,
        }
    }

    async fn job_complete_many(&self, leases: &[Lease], keep: bool) -> Result<u64, sqlx::Error> {
        let ids: Vec<Uuid> = leases.iter().map(|l| l.job_id.0).collect();
        let tokens: Vec<Uuid> = leases.iter().map(|l| l.token).collect();
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_complete_many.clone())
            .persistent(self.named())
            .bind(&ids)
            .bind(&tokens)
            .bind(keep)
            .fetch_one(e))?;
        Ok(count(done.try_get("completed")?))
    }

    async fn job_complete_and_claim(
        &self,
        leases: &[Lease],
        keep: bool,
        p: JobClaim<'_>,
    ) -> Result<Option<(u64, Vec<Leased>)>, sqlx::Error> {
        let ids: Vec<Uuid> = leases.iter().map(|l| l.job_id.0).collect();
        let tokens: Vec<Uuid> = leases.iter().map(|l| l.token).collect();
        let rows = on_pool!(self, |e| sqlx::query(
            self.sql.job_complete_and_claim.clone()
        )
        .persistent(self.named())
        .bind(p.queue)
        .bind(limit(p.limit))
        .bind(micros(p.lease))
        .bind(p.worker)
        .bind(&ids)
        .bind(&tokens)
        .bind(keep)
        .fetch_all(e))?;
        let completed = match rows.first() {
            Some(row) => count(row.try_get("completed")?),
            None => 0,
        };
        let mut claimed = Vec::with_capacity(rows.len());
        for row in &rows {
            if row.try_get::<Option<Uuid>, _>("id")?.is_some() {
                claimed.push(row);
            }
        }
        Ok(Some((completed, leased(claimed)?)))
    }

    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_fail_retry.clone())
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(micros(p.delay))
            .bind(p.error)
            .bind(signed(p.errors_kept))
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_fail_dead.clone())
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(p.error)
            .bind(signed(p.errors_kept))
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_snooze.clone())
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(micros(p.delay))
            .bind(signed(p.max_snoozes))
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>, sqlx::Error> {
        let row: Option<(Option<String>, i64)> =
            on_pool!(self, |e| sqlx::query_as(self.sql.job_meta_get.clone())
                .persistent(self.named())
                .bind(lease.job_id.0)
                .bind(lease.token)
                .fetch_optional(e))?;
        Ok(row.map(|(meta, version)| StoredMeta { meta, version }))
    }

    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_meta_set.clone())
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(p.version)
            .bind(p.meta)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_release(&self, lease: &Lease) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_release.clone())
            .persistent(self.named())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_extend(
        &self,
        lease: &Lease,
        by: Duration,
    ) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
        if self.profile.volatile_in_update {
            return on_pool!(self, |e| sqlx::query_scalar(self.sql.job_extend.clone())
                .persistent(self.named())
                .bind(lease.job_id.0)
                .bind(lease.token)
                .bind(micros(by))
                .fetch_optional(e));
        }
        // Without clock_timestamp() in an UPDATE: lock the row first, then compute the expiry
        // in a statement that starts after the lock was granted.
        let mut tx = self.pool.begin().await?;
        let locked: Option<Uuid> = sqlx::query_scalar(self.sql.job_extend_lock.clone())
            .persistent(self.named())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .fetch_optional(&mut *tx)
            .await?;
        if locked.is_none() {
            tx.rollback().await?;
            return Ok(None);
        }
        let expires = sqlx::query_scalar(self.sql.job_extend_locked.clone())
            .persistent(self.named())
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(micros(by))
            .fetch_optional(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(expires)
    }

    async fn job_state(
        &self,
        target: Target<'_, PgConnection>,
        id: JobId,
    ) -> Result<Option<JobState>, sqlx::Error> {
        let q = sqlx::query_scalar::<_, String>(self.sql.job_state.clone())
            .persistent(self.named())
            .bind(id.0);
        let state = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_optional(e))?,
            Target::Tx(conn) => q.fetch_optional(conn).await?,
        };
        state.map(|s| parse_state(&s)).transpose()
    }

    async fn job_expired(&self, n: usize) -> Result<Vec<Expired>, sqlx::Error> {
        let rows: Vec<(Uuid, Option<Uuid>, String, i32, i32)> =
            on_pool!(self, |e| sqlx::query_as(self.sql.job_expired.clone())
                .persistent(self.named())
                .bind(limit(n))
                .fetch_all(e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, token, queue, attempts, max_attempts)| {
                Some(Expired {
                    id: JobId(id),
                    token: token?,
                    queue,
                    attempts: unsigned(attempts),
                    max_attempts: unsigned(max_attempts),
                })
            })
            .collect())
    }

    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64, sqlx::Error> {
        let ids: Vec<Uuid> = p.jobs.iter().map(|(id, _)| id.0).collect();
        let tokens: Vec<Uuid> = p.jobs.iter().map(|(_, t)| *t).collect();
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_rescue.clone())
            .persistent(self.named())
            .bind(&ids)
            .bind(&tokens)
            .bind(p.dead)
            .bind(p.error)
            .bind(signed(p.errors_kept))
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_cancel(&self, id: JobId) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_cancel.clone())
            .persistent(self.named())
            .bind(id.0)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_retry(
        &self,
        conn: &mut PgConnection,
        id: JobId,
    ) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar(self.sql.job_retry.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_optional(conn)
            .await
    }

    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>, sqlx::Error> {
        on_pool!(self, |e| sqlx::query_scalar(
            self.sql.job_reschedule.clone()
        )
        .persistent(self.named())
        .bind(p.id.0)
        .bind(p.delay.map(micros))
        .bind(p.priority)
        .fetch_optional(e))
    }

    async fn job_get(&self, id: JobId) -> Result<Option<Job>, sqlx::Error> {
        let row = on_pool!(self, |e| sqlx::query(self.sql.job_get.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_optional(e))?;
        row.as_ref().map(job_detail_from_row).transpose()
    }

    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.job_list.clone())
            .persistent(self.named())
            .bind(req.queue.as_deref())
            .bind(req.state.map(|s| s.as_str()))
            .bind(req.before.map(|id| id.0))
            .bind(limit(req.limit))
            .bind(req.kind.as_deref())
            .fetch_all(e))?;
        rows.iter()
            .map(|r| job_from_row(r).map(|(job, _)| job))
            .collect()
    }

    async fn job_stats(
        &self,
        queue: Option<&str>,
        cap: Option<u64>,
    ) -> Result<Vec<QueueStats>, sqlx::Error> {
        let cap = cap.map(|c| i64::try_from(c).unwrap_or(i64::MAX));
        type Row = (
            String,
            i64,
            i64,
            i64,
            i64,
            Option<DateTime<Utc>>,
            i64,
            i64,
            i64,
        );
        let rows: Vec<Row> = on_pool!(self, |e| sqlx::query_as(self.sql.job_stats.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(cap)
            .fetch_all(e))?;
        Ok(rows
            .into_iter()
            .map(
                |(
                    queue,
                    waiting,
                    available,
                    scheduled,
                    running,
                    oldest_due,
                    completed,
                    dead,
                    cancelled,
                )| {
                    QueueStats {
                        queue,
                        waiting: count(waiting),
                        available: count(available),
                        scheduled: count(scheduled),
                        running: count(running),
                        oldest_due,
                        completed: count(completed),
                        dead: count(dead),
                        cancelled: count(cancelled),
                        ..QueueStats::default()
                    }
                },
            )
            .collect())
    }

    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = p.states.iter().map(|s| s.as_str()).collect();
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_prune.clone())
            .persistent(self.named())
            .bind(&states)
            .bind(micros(p.older_than))
            .bind(p.queue)
            .bind(limit(p.limit))
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let rows: Vec<(Uuid, String)> =
            on_pool!(self, |e| sqlx::query_as(self.sql.job_ids.clone())
                .persistent(self.named())
                .bind(m.queue)
                .bind(&states)
                .bind(m.kind)
                .bind(m.older_than.map(micros))
                .bind(m.before.map(|id| id.0))
                .bind(limit(m.limit))
                .fetch_all(e))?;
        Ok(rows.into_iter().map(|(id, q)| (JobId(id), q)).collect())
    }

    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let n: i64 = on_pool!(self, |e| sqlx::query_scalar(self.sql.job_count.clone())
            .persistent(self.named())
            .bind(m.queue)
            .bind(&states)
            .bind(m.kind)
            .bind(m.older_than.map(micros))
            .fetch_one(e))?;
        Ok(count(n))
    }

    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64, sqlx::Error> {
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_cancel_many.clone())
            .persistent(self.named())
            .bind(&ids)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_retry_many(
        &self,
        conn: &mut PgConnection,
        ids: &[JobId],
    ) -> Result<u64, sqlx::Error> {
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let done = sqlx::query(self.sql.job_retry_many.clone())
            .persistent(self.named())
            .bind(&ids)
            .execute(conn)
            .await?;
        Ok(done.rows_affected())
    }

    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>, sqlx::Error> {
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let rows: Vec<Uuid> =
            on_pool!(self, |e| sqlx::query_scalar(self.sql.job_workflows.clone())
                .persistent(self.named())
                .bind(&ids)
                .fetch_all(e))?;
        Ok(rows.into_iter().map(WorkflowId).collect())
    }

    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64, sqlx::Error> {
        let states: Vec<&str> = m.states.iter().map(|s| s.as_str()).collect();
        let n: i64 = on_pool!(self, |e| sqlx::query_scalar(
            self.sql.job_dependents_count.clone()
        )
        .persistent(self.named())
        .bind(m.queue)
        .bind(&states)
        .bind(m.kind)
        .bind(m.older_than.map(micros))
        .fetch_one(e))?;
        Ok(count(n))
    }

    async fn job_delete_many(
        &self,
        ids: &[JobId],
        states: &[JobState],
    ) -> Result<u64, sqlx::Error> {
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let states: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        let done = on_pool!(self, |e| sqlx::query(self.sql.job_delete_many.clone())
            .persistent(self.named())
            .bind(&ids)
            .bind(&states)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn maintenance_claim(
        &self,
        task: &str,
        token: Uuid,
        lease: Duration,
    ) -> Result<bool, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.maintenance_claim.clone())
            .persistent(self.named())
            .bind(task)
            .bind(token)
            .bind(micros(lease))
            .execute(e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn maintenance_release(
        &self,
        task: &str,
        token: Uuid,
        next_in: Duration,
    ) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.maintenance_release.clone())
            .persistent(self.named())
            .bind(task)
            .bind(token)
            .bind(micros(next_in))
            .execute(e))?;
        Ok(())
    }

    async fn notify(&self, queues: &[&str]) -> Result<(), sqlx::Error> {
        if self.wakes(queues).is_empty() {
            return Ok(());
        }
        on_pool!(self, |e| sqlx::query(self.sql.notify.clone())
            .persistent(self.named())
            .bind(&self.channel)
            .bind(queues)
            .execute(e))?;
        Ok(())
    }

    fn watch(&self, queue: &str, hub: &Arc<WakeHub>) {
        if self.listen {
            self.listener.ensure(
                queue,
                &self.listen_pool,
                &self.channel,
                hub,
                self.nodes.moved(),
                Probe {
                    pool: self.pool.clone(),
                    pinned: self.pinned,
                    notify: self.sql.notify.clone(),
                },
            );
        }
    }

    // Periodic jobs (schedules).

    type Tx = Transaction<'static, Postgres>;

    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>, sqlx::Error> {
        let row = on_pool!(self, |e| sqlx::query(self.sql.queue_control_get.clone())
            .persistent(self.named())
            .bind(queue)
            .fetch_optional(e))?;
        row.as_ref().map(control).transpose()
    }

    async fn queue_control_lock(
        &self,
        conn: &mut PgConnection,
        queue: &str,
    ) -> Result<Option<QueueControl>, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_control_lock.clone())
            .persistent(self.named())
            .bind(queue)
            .fetch_optional(conn)
            .await?;
        row.as_ref().map(control).transpose()
    }

    async fn queue_control_list(&self) -> Result<Vec<QueueControl>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.queue_control_list.clone())
            .persistent(self.named())
            .fetch_all(e))?;
        rows.iter().map(control).collect()
    }

    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_paused.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(paused)
            .execute(e))?;
        Ok(())
    }

    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_limit.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(limit.map(|n| i32::try_from(n).unwrap_or(i32::MAX)))
            .execute(e))?;
        Ok(())
    }

    async fn queue_set_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_rate.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(rate.map(|(n, _)| i32::try_from(n).unwrap_or(i32::MAX)))
            .bind(rate.map(|(_, period)| period))
            .execute(e))?;
        Ok(())
    }

    async fn queue_rate_state(
        &self,
        conn: &mut PgConnection,
        queue: &str,
    ) -> Result<RateState, sqlx::Error> {
        let row = sqlx::query(self.sql.queue_rate_state.clone())
            .persistent(self.named())
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
        conn: &mut PgConnection,
        queue: &str,
        window: i64,
        count: u32,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_rate_record.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(window)
            .bind(i32::try_from(count).unwrap_or(i32::MAX))
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn queue_set_key_limit(
        &self,
        queue: &str,
        limit: Option<u32>,
    ) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_key_limit.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(limit.map(|n| i32::try_from(n).unwrap_or(i32::MAX)))
            .execute(e))?;
        Ok(())
    }

    async fn queue_set_key_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_key_rate.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(rate.map(|(n, _)| i32::try_from(n).unwrap_or(i32::MAX)))
            .bind(rate.map(|(_, period)| period))
            .execute(e))?;
        Ok(())
    }

    async fn queue_key_rate_get(
        &self,
        conn: &mut PgConnection,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>, sqlx::Error> {
        let row: Option<(i64, i32)> = sqlx::query_as(self.sql.queue_key_rate_get.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(key)
            .fetch_optional(conn)
            .await?;
        Ok(row.map(|(w, n)| (w, u32::try_from(n).unwrap_or(0))))
    }

    async fn queue_key_rate_put(
        &self,
        conn: &mut PgConnection,
        queue: &str,
        key: &str,
        window: i64,
        count: u32,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_key_rate_put.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(key)
            .bind(window)
            .bind(i32::try_from(count).unwrap_or(i32::MAX))
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<(), sqlx::Error> {
        on_pool!(self, |e| sqlx::query(self.sql.queue_set_fair.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(on)
            .execute(e))?;
        Ok(())
    }

    async fn queue_key_cursor(
        &self,
        conn: &mut PgConnection,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.queue_key_cursor.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(cursor)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn job_key_leases(
        &self,
        target: Target<'_, PgConnection>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>, sqlx::Error> {
        let q = sqlx::query_as::<_, (String, i64)>(self.sql.job_key_leases.clone())
            .persistent(self.named())
            .bind(queue);
        let rows = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_all(e))?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        Ok(rows.into_iter().map(|(k, n)| (k, count(n))).collect())
    }

    async fn job_key_next(
        &self,
        conn: &mut PgConnection,
        queue: &str,
        after: &str,
        n: usize,
    ) -> Result<Vec<String>, sqlx::Error> {
        sqlx::query_scalar(self.sql.job_key_next.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(after)
            .bind(i32::try_from(n).unwrap_or(i32::MAX))
            .fetch_all(conn)
            .await
    }

    async fn job_claim_key(
        &self,
        conn: &mut PgConnection,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>, sqlx::Error> {
        let statement = match key {
            Some(_) => self.sql.job_claim_key.clone(),
            None => self.sql.job_claim_unkeyed.clone(),
        };
        let mut q = sqlx::query(statement)
            .persistent(self.named())
            .bind(p.queue)
            .bind(limit(p.limit))
            .bind(micros(p.lease))
            .bind(p.worker);
        if let Some(key) = key {
            q = q.bind(key);
        }
        leased(&q.fetch_all(conn).await?)
    }

    async fn job_claim_keys(
        &self,
        conn: &mut PgConnection,
        p: JobClaim<'_>,
        keys: &[(String, usize)],
    ) -> Result<Vec<Vec<Leased>>, sqlx::Error> {
        let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
        let limits: Vec<i64> = keys.iter().map(|(_, n)| limit(*n)).collect();
        let rows = sqlx::query(self.sql.job_claim_keys.clone())
            .persistent(self.named())
            .bind(p.queue)
            .bind(micros(p.lease))
            .bind(p.worker)
            .bind(&names)
            .bind(&limits)
            .fetch_all(conn)
            .await?;
        let mut out: Vec<Vec<Leased>> = keys.iter().map(|_| Vec::new()).collect();
        for row in &rows {
            let key: String = row.try_get("concurrency_key")?;
            let at = names
                .iter()
                .position(|k| *k == key)
                .ok_or_else(|| decode(format!("claimed a job of key {key:?}, not asked for")))?;
            out[at].extend(leased([row])?);
        }
        Ok(out)
    }

    async fn queue_key_rate_prune(
        &self,
        queue: &str,
        before: i64,
        n: usize,
    ) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.queue_key_rate_prune.clone())
            .persistent(self.named())
            .bind(queue)
            .bind(before)
            .bind(limit(n))
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64, sqlx::Error> {
        let n: i64 = on_pool!(self, |e| sqlx::query_scalar(
            self.sql.job_key_waiting.clone()
        )
        .persistent(self.named())
        .bind(queue)
        .bind(key)
        .fetch_one(e))?;
        Ok(count(n))
    }

    async fn job_live_leases(
        &self,
        conn: &mut PgConnection,
        queue: &str,
    ) -> Result<u64, sqlx::Error> {
        let n: i64 = sqlx::query_scalar(self.sql.job_live_leases.clone())
            .persistent(self.named())
            .bind(queue)
            .fetch_one(conn)
            .await?;
        Ok(count(n))
    }

    async fn tx_begin(&self) -> Result<Self::Tx, sqlx::Error> {
        self.pool.begin().await
    }

    fn tx_conn(tx: &mut Self::Tx) -> &mut PgConnection {
        tx
    }

    async fn tx_commit(&self, tx: Self::Tx) -> Result<(), sqlx::Error> {
        tx.commit().await
    }

    async fn tx_rollback(&self, tx: Self::Tx) -> Result<(), sqlx::Error> {
        tx.rollback().await
    }

    type Savepoint<'c> = Transaction<'c, Postgres>;

    async fn savepoint<'c>(
        &self,
        conn: &'c mut PgConnection,
    ) -> Result<Transaction<'c, Postgres>, sqlx::Error> {
        conn.begin().await
    }

    async fn savepoint_release(
        &self,
        savepoint: Transaction<'_, Postgres>,
    ) -> Result<(), sqlx::Error> {
        savepoint.commit().await
    }

    async fn savepoint_rollback(
        &self,
        savepoint: Transaction<'_, Postgres>,
    ) -> Result<(), sqlx::Error> {
        savepoint.rollback().await
    }

    async fn schedule_get(&self, name: &str) -> Result<Option<StoredSchedule>, sqlx::Error> {
        let row = on_pool!(self, |e| sqlx::query(self.sql.schedule_get.clone())
            .persistent(self.named())
            .bind(name)
            .fetch_optional(e))?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_list(&self) -> Result<Vec<StoredSchedule>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.schedule_list.clone())
            .persistent(self.named())
            .fetch_all(e))?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn schedule_insert(&self, s: &StoredSchedule) -> Result<(), sqlx::Error> {
        let q = bind_schedule(
            sqlx::query(self.sql.schedule_insert.clone()).persistent(self.named()),
            s,
        )
        .bind(s.created_at)
        .bind(s.updated_at)
        .bind(&s.kind);
        on_pool!(self, |e| q.execute(e))?;
        Ok(())
    }

    async fn schedule_update(&self, s: &StoredSchedule, version: i64) -> Result<u64, sqlx::Error> {
        let q = bind_schedule(
            sqlx::query(self.sql.schedule_update.clone()).persistent(self.named()),
            s,
        )
        .bind(s.updated_at)
        .bind(version)
        .bind(&s.kind);
        let done = on_pool!(self, |e| q.execute(e))?;
        Ok(done.rows_affected())
    }

    async fn schedule_touch(
        &self,
        name: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.schedule_touch.clone())
            .persistent(self.named())
            .bind(name)
            .bind(expires_at)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn schedule_advance(
        &self,
        target: Target<'_, PgConnection>,
        p: ScheduleAdvance<'_>,
    ) -> Result<u64, sqlx::Error> {
        let q = sqlx::query(self.sql.schedule_advance.clone())
            .persistent(self.named())
            .bind(p.name)
            .bind(p.version)
            .bind(p.last_slot)
            .bind(p.last_job.0)
            .bind(p.now);
        let done = match target {
            Target::Pool => on_pool!(self, |e| q.execute(e))?,
            Target::Tx(conn) => q.execute(conn).await?,
        };
        Ok(done.rows_affected())
    }

    async fn schedule_delete(&self, name: &str, version: i64) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.schedule_delete.clone())
            .persistent(self.named())
            .bind(name)
            .bind(version)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    // Workflows.

    async fn workflow_insert(
        &self,
        conn: &mut PgConnection,
        w: WorkflowInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.workflow_insert.clone())
            .persistent(self.named())
            .bind(w.id.0)
            .bind(w.name)
            .bind(w.open)
            .bind(w.callback.map(|j| j.0))
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn workflow_steps_insert(
        &self,
        conn: &mut PgConnection,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<(), sqlx::Error> {
        for chunk in steps.chunks(INSERT_CHUNK) {
            let (jobs, names): (Vec<Uuid>, Vec<&str>) =
                chunk.iter().map(|(job, step)| (job.0, *step)).unzip();
            sqlx::query(self.sql.workflow_steps_insert.clone())
                .persistent(self.named())
                .bind(workflow.0)
                .bind(&jobs)
                .bind(&names)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    async fn workflow_deps_insert(
        &self,
        conn: &mut PgConnection,
        edges: &[WorkflowEdge],
    ) -> Result<(), sqlx::Error> {
        for chunk in edges.chunks(INSERT_CHUNK) {
            let deps: Vec<Uuid> = chunk.iter().map(|e| e.dep.0).collect();
            let jobs: Vec<Uuid> = chunk.iter().map(|e| e.job.0).collect();
            let policies: Vec<i16> = chunk.iter().map(|e| e.policy.code()).collect();
            sqlx::query(self.sql.workflow_deps_insert.clone())
                .persistent(self.named())
                .bind(&deps)
                .bind(&jobs)
                .bind(&policies)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    async fn workflow_lock(
        &self,
        conn: &mut PgConnection,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        let row = sqlx::query(self.sql.workflow_lock.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_optional(conn)
            .await?;
        row.as_ref().map(workflow_from_row).transpose()
    }

    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.workflow_seal.clone())
            .persistent(self.named())
            .bind(id.0)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn workflow_dependents(
        &self,
        target: Target<'_, PgConnection>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids: Vec<Uuid> = finished.iter().map(|id| id.0).collect();
        let q = sqlx::query_scalar::<_, Uuid>(self.sql.workflow_dependents.clone())
            .persistent(self.named())
            .bind(&ids);
        let rows = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_all(e))?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        Ok(rows.into_iter().map(JobId).collect())
    }

    async fn workflow_block(
        &self,
        target: Target<'_, PgConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids: Vec<Uuid> = waiting.iter().map(|id| id.0).collect();
        let q = sqlx::query_scalar::<_, Uuid>(self.sql.workflow_block.clone())
            .persistent(self.named())
            .bind(&ids);
        let rows = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_all(e))?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        Ok(rows.into_iter().map(JobId).collect())
    }

    async fn workflow_promote(
        &self,
        target: Target<'_, PgConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let ids: Vec<Uuid> = waiting.iter().map(|id| id.0).collect();
        let q = sqlx::query_as::<_, (Uuid, String)>(self.sql.workflow_promote.clone())
            .persistent(self.named())
            .bind(&ids);
        let rows = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_all(e))?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        Ok(rows.into_iter().map(|(id, q)| (JobId(id), q)).collect())
    }

    async fn workflow_reopen(
        &self,
        conn: &mut PgConnection,
        retried: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids: Vec<Uuid> = retried.iter().map(|id| id.0).collect();
        let rows: Vec<Uuid> = sqlx::query_scalar(self.sql.workflow_reopen.clone())
            .persistent(self.named())
            .bind(&ids)
            .fetch_all(conn)
            .await?;
        Ok(rows.into_iter().map(JobId).collect())
    }

    async fn workflow_blocked(
        &self,
        conn: &mut PgConnection,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>, sqlx::Error> {
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let rows: Vec<(Uuid, Uuid)> = sqlx::query_as(self.sql.workflow_blocked.clone())
            .persistent(self.named())
            .bind(&ids)
            .fetch_all(conn)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(job, dep)| (JobId(job), JobId(dep)))
            .collect())
    }

    async fn workflow_waiting(
        &self,
        after: Option<JobId>,
        n: usize,
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let rows: Vec<Uuid> = on_pool!(self, |e| sqlx::query_scalar(
            self.sql.workflow_waiting.clone()
        )
        .persistent(self.named())
        .bind(after.map(|id| id.0))
        .bind(limit(n))
        .fetch_all(e))?;
        Ok(rows.into_iter().map(JobId).collect())
    }

    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        let row = on_pool!(self, |e| sqlx::query(self.sql.workflow_get.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_optional(e))?;
        row.as_ref().map(workflow_from_row).transpose()
    }

    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.workflow_jobs.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_all(e))?;
        rows.iter()
            .map(|r| {
                let (mut job, _) = job_from_row(r)?;
                job.step = r.try_get("step")?;
                Ok(job)
            })
            .collect()
    }

    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>, sqlx::Error> {
        let rows: Vec<(Uuid, Uuid, i16)> =
            on_pool!(self, |e| sqlx::query_as(self.sql.workflow_edges.clone())
                .persistent(self.named())
                .bind(id.0)
                .fetch_all(e))?;
        Ok(rows
            .into_iter()
            .map(|(job, dep, policy)| WorkflowEdge {
                job: JobId(job),
                dep: JobId(dep),
                policy: DepPolicy::from_code(i64::from(policy)),
            })
            .collect())
    }

    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        n: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.workflow_list.clone())
            .persistent(self.named())
            .bind(before.map(|id| id.0))
            .bind(limit(n))
            .fetch_all(e))?;
        // One row per workflow and state, a workflow's rows together, newest first.
        let mut out: Vec<(StoredWorkflow, Vec<(JobState, u64)>)> = Vec::new();
        for row in &rows {
            let id = WorkflowId(row.try_get("id")?);
            if out.last().is_none_or(|(w, _)| w.id != id) {
                out.push((workflow_from_row(row)?, Vec::new()));
            }
            // NULL for a workflow without jobs: its list of counts stays empty.
            let state: Option<String> = row.try_get("state")?;
            let jobs: Option<i64> = row.try_get("jobs")?;
            if let (Some(state), Some(jobs), Some((_, counts))) = (state, jobs, out.last_mut()) {
                counts.push((parse_state(&state)?, count(jobs)));
            }
        }
        Ok(out)
    }

    async fn workflow_prune_lock(
        &self,
        conn: &mut PgConnection,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>, sqlx::Error> {
        let rows: Vec<(Uuid, DateTime<Utc>)> = sqlx::query_as(self.sql.workflow_prune_lock.clone())
            .persistent(self.named())
            .bind(micros(p.older_than))
            .bind(p.after.map(|(at, _)| at))
            .bind(p.after.map(|(_, id)| id.0))
            .bind(limit(p.limit))
            .fetch_all(conn)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, at)| (WorkflowId(id), at))
            .collect())
    }

    /// One statement (data-modifying CTEs) returning what it deleted.
    async fn workflow_prune(
        &self,
        conn: &mut PgConnection,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned, sqlx::Error> {
        let ids: Vec<Uuid> = p.ids.iter().map(|id| id.0).collect();
        let (workflows, jobs): (i64, i64) = sqlx::query_as(self.sql.workflow_prune.clone())
            .persistent(self.named())
            .bind(&ids)
            .bind(p.completed.map(micros))
            .bind(p.dead.map(micros))
            .bind(p.cancelled.map(micros))
            .fetch_one(conn)
            .await?;
        Ok(WorkflowPruned {
            workflows: count(workflows),
            jobs: count(jobs),
        })
    }

    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.job_deps.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_all(e))?;
        rows.iter()
            .map(|row| {
                let policy: i16 = row.try_get("policy")?;
                let state: Option<String> = row.try_get("state")?;
                Ok(Dependency {
                    id: JobId(row.try_get("dep_id")?),
                    step: row.try_get("step")?,
                    policy: DepPolicy::from_code(i64::from(policy)),
                    state: state.as_deref().map(parse_state).transpose()?,
                    output: row
                        .try_get::<Option<Json<Box<RawValue>>>, _>("output")?
                        .map(|Json(o)| o),
                })
            })
            .collect()
    }
}
