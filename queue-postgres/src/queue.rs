//! [`PostgresQueue`]: the [`Queue`] implementation, plus pushing and completing inside the
//! caller's own transaction.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::queue::{validate_ack_batch, validate_batch};
use queue_core::validate::{self, truncate_error};
use queue_core::{
    Capabilities, ClaimStrategy, Error, FailDecision, FailOutcome, Failure, Job, JobId, JobState,
    Lease, Leased, Limits, ListRequest, NewJob, PopRequest, PruneRequest, Queue, QueueStats,
    Result, RetryPolicy, WakeHub,
};
use serde_json::value::RawValue;
use sqlx::postgres::{PgExecutor, PgRow};
use sqlx::types::Json;
use sqlx::{PgPool, Postgres, Row, Transaction};
use uuid::Uuid;

use crate::builder::PostgresQueueBuilder;
use crate::error::map;
use crate::listen::Listener;
use crate::migrate;
use crate::notify::Notifier;
use crate::sql::Statements;

const LOG: &str = "queue::postgres";

/// Most rows one `INSERT ... SELECT FROM UNNEST` carries; larger batches are split into several
/// statements inside one transaction.
const INSERT_CHUNK: usize = 5_000;

/// How often the optimistic claim re-reads candidates when every one was taken by others.
const OPTIMISTIC_ROUNDS: usize = 4;

/// A job queue stored in a PostgreSQL schema. Cheap to clone: clones share one connection pool,
/// one wake hub and one LISTEN task.
#[derive(Clone, Debug)]
pub struct PostgresQueue {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) pool: PgPool,
    pub(crate) listen_pool: PgPool,
    pub(crate) schema: String,
    pub(crate) channel: String,
    pub(crate) sql: Statements,
    pub(crate) caps: Capabilities,
    pub(crate) retry_policy: RetryPolicy,
    pub(crate) limits: Limits,
    pub(crate) notify: bool,
    pub(crate) notifier: Notifier,
    pub(crate) hub: Arc<WakeHub>,
    pub(crate) listener: Listener,
}

/// Microseconds of `d`, saturating (every duration reaching SQL is validated far below that).
fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn unsigned(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

fn corrupt(what: String) -> Error {
    Error::database(what)
}

/// A job row as returned by `RETURNING j.id, ...` / `SELECT j.id, ...`, with its lease token.
fn job_from_row(row: &PgRow) -> Result<(Job, Option<Uuid>)> {
    let get_err = map;
    let state: String = row.try_get("state").map_err(get_err)?;
    let state = state
        .parse::<JobState>()
        .map_err(|_| corrupt(format!("unknown job state {state:?} in the jobs table")))?;
    let Json(payload): Json<Box<RawValue>> = row.try_get("payload").map_err(get_err)?;
    let job = Job {
        id: JobId(row.try_get("id").map_err(get_err)?),
        queue: row.try_get("queue").map_err(get_err)?,
        payload,
        priority: row.try_get("priority").map_err(get_err)?,
        state,
        attempts: unsigned(row.try_get("attempts").map_err(get_err)?),
        max_attempts: unsigned(row.try_get("max_attempts").map_err(get_err)?),
        run_at: row.try_get("run_at").map_err(get_err)?,
        lease_expires_at: row.try_get("lease_expires_at").map_err(get_err)?,
        worker: row.try_get("worker").map_err(get_err)?,
        last_error: row.try_get("last_error").map_err(get_err)?,
        dedup_key: row.try_get("dedup_key").map_err(get_err)?,
        created_at: row.try_get("created_at").map_err(get_err)?,
        updated_at: row.try_get("updated_at").map_err(get_err)?,
        finished_at: row.try_get("finished_at").map_err(get_err)?,
    };
    let token: Option<Uuid> = row.try_get("lease_token").map_err(get_err)?;
    Ok((job, token))
}

/// A claimed row as a job plus the lease its claim created.
fn leased_from_row(row: &PgRow) -> Result<Leased> {
    let (job, token) = job_from_row(row)?;
    let (Some(token), Some(expires_at)) = (token, job.lease_expires_at) else {
        return Err(corrupt(format!("claimed job {} has no lease", job.id)));
    };
    let lease = Lease {
        job_id: job.id,
        queue: job.queue.clone(),
        token,
        expires_at,
        attempt: job.attempts,
        max_attempts: job.max_attempts,
    };
    Ok(Leased { job, lease })
}

/// Claim order: priority descending, then run_at, then id. `RETURNING` has no order of its own.
fn sort_claimed(jobs: &mut [Leased]) {
    jobs.sort_by(|a, b| {
        b.job
            .priority
            .cmp(&a.job.priority)
            .then(a.job.run_at.cmp(&b.job.run_at))
            .then(a.job.id.cmp(&b.job.id))
    });
}

/// The columns of a batch insert, one array per column.
#[derive(Default)]
struct Columns<'a> {
    ids: Vec<Uuid>,
    queues: Vec<&'a str>,
    payloads: Vec<&'a str>,
    priorities: Vec<i32>,
    max_attempts: Vec<i32>,
    delays: Vec<i64>,
    dedup_keys: Vec<Option<&'a str>>,
}

impl<'a> Columns<'a> {
    fn of(jobs: &'a [NewJob], now: DateTime<Utc>) -> Self {
        let mut c = Columns::default();
        for job in jobs {
            c.ids.push(job.id().0);
            c.queues.push(job.queue());
            c.payloads.push(job.payload_json());
            c.priorities.push(job.priority_value());
            c.max_attempts
                .push(i32::try_from(job.max_attempts_value()).unwrap_or(i32::MAX));
            c.delays.push(micros(job.delay_from(now)));
            c.dedup_keys.push(job.dedup_key_value());
        }
        c
    }
}

/// The distinct queues of a batch, with how many jobs each got.
fn queue_counts(jobs: &[NewJob]) -> Vec<(&str, usize)> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for job in jobs {
        match index.get(job.queue()) {
            Some(&i) => counts[i].1 += 1,
            None => {
                index.insert(job.queue(), counts.len());
                counts.push((job.queue(), 1));
            }
        }
    }
    counts
}

/// A duplicate from a single push names the job's own queue and key exactly.
fn with_job(err: Error, job: &NewJob) -> Error {
    match err {
        Error::Duplicate { .. } => Error::Duplicate {
            queue: job.queue().to_owned(),
            dedup_key: job.dedup_key_value().unwrap_or_default().to_owned(),
        },
        other => other,
    }
}

impl PostgresQueue {
    /// Starts configuring a queue stored in the database at `url`
    /// (`postgres://user:password@host:port/database`).
    pub fn builder(url: impl Into<String>) -> PostgresQueueBuilder {
        PostgresQueueBuilder::new(url.into())
    }

    /// The connection pool, e.g. to begin the transactions that [`PostgresQueue::push_in_tx`]
    /// and [`PostgresQueue::complete_in_tx`] take part in.
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// The schema holding the queue's tables.
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }

    /// The channel pushes NOTIFY and workers LISTEN on; its payloads are queue names.
    pub fn channel(&self) -> &str {
        &self.inner.channel
    }

    /// Whether this value's LISTEN connection is up (it starts with the first
    /// [`Queue::wait_for_work`]); while it is down, waiting falls back to polling.
    pub fn is_listening(&self) -> bool {
        self.inner.listener.is_connected()
    }

    /// Pushes `job` inside the caller's transaction: the job exists iff `tx` commits, and the
    /// NOTIFY that wakes workers is delivered at that commit.
    ///
    /// # Errors
    /// As [`Queue::push`]. The transaction is aborted by a database error; roll it back.
    pub async fn push_in_tx(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        job: NewJob,
    ) -> Result<JobId> {
        job.validate(&self.inner.limits)?;
        // The commit time is unknown here, so this push always carries its own NOTIFY.
        self.insert_one(&mut **tx, &job, self.inner.notify).await?;
        Ok(job.id())
    }

    /// Pushes every job of `jobs` inside the caller's transaction: all exist iff `tx` commits.
    ///
    /// # Errors
    /// As [`Queue::push_batch`]. The transaction is aborted by a database error; roll it back.
    pub async fn push_batch_in_tx(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<JobId>> {
        validate_batch(&jobs, &self.inner.limits)?;
        self.insert_batch(tx, &jobs).await?;
        Ok(jobs.iter().map(NewJob::id).collect())
    }

    /// Marks the leased job completed inside the caller's transaction, so the handler's own
    /// writes and the completion commit together or not at all (exactly-once effects).
    ///
    /// # Errors
    /// [`Error::LeaseLost`] or [`Error::Cancelled`] when the lease is no longer current: nothing
    /// was changed, and the caller should roll back its own writes.
    pub async fn complete_in_tx(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        lease: &Lease,
    ) -> Result<()> {
        let done = sqlx::query(&self.inner.sql.job_ack)
            .bind(lease.job_id.0)
            .bind(lease.token)
            .execute(&mut **tx)
            .await
            .map_err(map)?;
        if done.rows_affected() == 0 {
            return Err(self.lease_error(&mut **tx, lease).await);
        }
        Ok(())
    }

    async fn insert_one<'e>(
        &self,
        ex: impl PgExecutor<'e>,
        job: &NewJob,
        notify: bool,
    ) -> Result<()> {
        let sql = &self.inner.sql;
        let text = if notify {
            &sql.job_insert_notify
        } else {
            &sql.job_insert
        };
        let mut query = sqlx::query(text)
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(i32::try_from(job.max_attempts_value()).unwrap_or(i32::MAX))
            .bind(micros(job.delay_from(Utc::now())))
            .bind(job.dedup_key_value());
        if notify {
            query = query.bind(&self.inner.channel);
        }
        query.execute(ex).await.map_err(|e| with_job(map(e), job))?;
        Ok(())
    }

    /// Inserts `jobs` with one statement per chunk on `conn`; the first statement also sends the
    /// batch's notifications (one per distinct queue).
    async fn insert_batch(&self, conn: &mut sqlx::PgConnection, jobs: &[NewJob]) -> Result<()> {
        let now = Utc::now();
        let sql = &self.inner.sql;
        let queues: Vec<&str> = queue_counts(jobs).into_iter().map(|(q, _)| q).collect();
        for (i, chunk) in jobs.chunks(INSERT_CHUNK).enumerate() {
            let c = Columns::of(chunk, now);
            let notify = self.inner.notify && i == 0;
            let text = if notify {
                &sql.job_insert_batch_notify
            } else {
                &sql.job_insert_batch
            };
            let mut query = sqlx::query(text)
                .bind(&c.ids)
                .bind(&c.queues)
                .bind(&c.payloads)
                .bind(&c.priorities)
                .bind(&c.max_attempts)
                .bind(&c.delays)
                .bind(&c.dedup_keys);
            if notify {
                query = query.bind(&self.inner.channel).bind(&queues);
            }
            query.execute(&mut *conn).await.map_err(map)?;
        }
        Ok(())
    }

    /// Wakes workers of `queue` everywhere: this value's at once, other processes' by NOTIFY.
    async fn wake(&self, queue: &str, jobs: usize) {
        let inner = &self.inner;
        inner.hub.notify(queue, jobs);
        if !inner.notify {
            return;
        }
        if let Err(error) = sqlx::query(&inner.sql.notify)
            .bind(&inner.channel)
            .bind(queue)
            .execute(&inner.pool)
            .await
        {
            tracing::warn!(target: LOG, queue, %error, "could not send a wake-up; workers will find the jobs at their next poll");
        }
    }

    /// Why a fenced transition of `lease` changed nothing: the job was cancelled, or the lease
    /// is simply no longer current (also when the job is gone).
    async fn lease_error<'e>(&self, ex: impl PgExecutor<'e>, lease: &Lease) -> Error {
        let state: std::result::Result<Option<String>, _> =
            sqlx::query_scalar(&self.inner.sql.job_lease_state)
                .bind(lease.job_id.0)
                .fetch_optional(ex)
                .await;
        match state {
            Ok(Some(s)) if s == JobState::Cancelled.as_str() => {
                Error::Cancelled { job: lease.job_id }
            }
            Ok(_) => Error::LeaseLost { job: lease.job_id },
            Err(e) => map(e),
        }
    }

    /// The error for an id-addressed operation that matched no row in an allowed state.
    async fn state_error(&self, id: JobId, operation: &'static str) -> Error {
        let state: std::result::Result<Option<String>, _> =
            sqlx::query_scalar(&self.inner.sql.job_lease_state)
                .bind(id.0)
                .fetch_optional(&self.inner.pool)
                .await;
        match state {
            Ok(None) => Error::NotFound { job: id },
            Ok(Some(s)) => match s.parse::<JobState>() {
                Ok(state) => Error::InvalidState {
                    job: id,
                    state,
                    operation,
                },
                Err(_) => corrupt(format!("unknown job state {s:?} in the jobs table")),
            },
            Err(e) => map(e),
        }
    }

    async fn claim_skip_locked(&self, req: &PopRequest) -> Result<Vec<PgRow>> {
        sqlx::query(&self.inner.sql.job_claim)
            .bind(&req.queue)
            .bind(i64::try_from(req.limit).unwrap_or(i64::MAX))
            .bind(micros(req.lease))
            .bind(&req.worker)
            .fetch_all(&self.inner.pool)
            .await
            .map_err(map)
    }

    async fn claim_optimistic(&self, req: &PopRequest) -> Result<Vec<PgRow>> {
        let sql = &self.inner.sql;
        for _ in 0..OPTIMISTIC_ROUNDS {
            let candidates: Vec<(Uuid, i64)> = sqlx::query_as(&sql.job_candidates)
                .bind(&req.queue)
                .bind(i64::try_from(req.limit).unwrap_or(i64::MAX))
                .fetch_all(&self.inner.pool)
                .await
                .map_err(map)?;
            if candidates.is_empty() {
                return Ok(Vec::new());
            }
            let (ids, versions): (Vec<Uuid>, Vec<i64>) = candidates.into_iter().unzip();
            let rows = sqlx::query(&sql.job_claim_versions)
                .bind(&ids)
                .bind(&versions)
                .bind(micros(req.lease))
                .bind(&req.worker)
                .fetch_all(&self.inner.pool)
                .await
                .map_err(map)?;
            if !rows.is_empty() {
                return Ok(rows);
            }
        }
        Ok(Vec::new())
    }

    /// Runs a fenced transition of `lease`; no row changed means the lease was lost.
    async fn fenced(
        &self,
        query: sqlx::query::Query<'_, Postgres, sqlx::postgres::PgArguments>,
        lease: &Lease,
    ) -> Result<()> {
        let done = query.execute(&self.inner.pool).await.map_err(map)?;
        if done.rows_affected() == 0 {
            return Err(self.lease_error(&self.inner.pool, lease).await);
        }
        Ok(())
    }
}

#[async_trait]
impl Queue for PostgresQueue {
    fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    async fn migrate(&self) -> Result<()> {
        migrate::run(&self.inner.pool, &self.inner.sql, &self.inner.schema).await
    }

    async fn push(&self, job: NewJob) -> Result<JobId> {
        job.validate(&self.inner.limits)?;
        let inner = &self.inner;
        let lead = inner.notify && inner.notifier.lead(job.queue());
        self.insert_one(&inner.pool, &job, lead).await?;
        if inner.notify && !lead {
            inner
                .notifier
                .trail(job.queue(), &inner.pool, &inner.sql.notify, &inner.channel);
        }
        inner.hub.notify(job.queue(), 1);
        Ok(job.id())
    }

    async fn push_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        validate_batch(&jobs, &self.inner.limits)?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        if jobs.len() <= INSERT_CHUNK {
            // One statement is atomic by itself: no BEGIN/COMMIT round trips.
            let mut conn = self.inner.pool.acquire().await.map_err(map)?;
            self.insert_batch(&mut conn, &jobs).await?;
        } else {
            let mut tx = self.inner.pool.begin().await.map_err(map)?;
            self.insert_batch(&mut tx, &jobs).await?;
            tx.commit().await.map_err(map)?;
        }
        for (queue, n) in queue_counts(&jobs) {
            self.inner.hub.notify(queue, n);
        }
        Ok(jobs.iter().map(NewJob::id).collect())
    }

    async fn pop(&self, req: PopRequest) -> Result<Vec<Leased>> {
        req.validate(&self.inner.limits)?;
        let rows = match self.inner.caps.claim {
            ClaimStrategy::Optimistic => self.claim_optimistic(&req).await?,
            _ => self.claim_skip_locked(&req).await?,
        };
        let mut jobs = rows
            .iter()
            .map(leased_from_row)
            .collect::<Result<Vec<_>>>()?;
        sort_claimed(&mut jobs);
        tracing::trace!(target: LOG, queue = %req.queue, claimed = jobs.len(), "pop");
        Ok(jobs)
    }

    async fn ack(&self, lease: &Lease) -> Result<()> {
        let q = sqlx::query(&self.inner.sql.job_ack)
            .bind(lease.job_id.0)
            .bind(lease.token);
        self.fenced(q, lease).await
    }

    async fn ack_batch(&self, leases: &[Lease]) -> Result<u64> {
        validate_ack_batch(leases, &self.inner.limits)?;
        if leases.is_empty() {
            return Ok(0);
        }
        let ids: Vec<Uuid> = leases.iter().map(|l| l.job_id.0).collect();
        let tokens: Vec<Uuid> = leases.iter().map(|l| l.token).collect();
        let done = sqlx::query(&self.inner.sql.job_ack_batch)
            .bind(&ids)
            .bind(&tokens)
            .execute(&self.inner.pool)
            .await
            .map_err(map)?;
        Ok(done.rows_affected())
    }

    async fn fail(&self, lease: &Lease, failure: Failure) -> Result<FailOutcome> {
        let message = truncate_error(&failure.message);
        match self.inner.retry_policy.decide(lease, &failure) {
            FailDecision::Retry(after) => {
                let q = sqlx::query(&self.inner.sql.job_fail_retry)
                    .bind(lease.job_id.0)
                    .bind(lease.token)
                    .bind(micros(after))
                    .bind(message);
                self.fenced(q, lease).await?;
                if after.is_zero() {
                    self.inner.hub.notify(&lease.queue, 1);
                }
                Ok(FailOutcome::Retrying { after })
            }
            FailDecision::Dead => {
                let q = sqlx::query(&self.inner.sql.job_fail_dead)
                    .bind(lease.job_id.0)
                    .bind(lease.token)
                    .bind(message);
                self.fenced(q, lease).await?;
                Ok(FailOutcome::Dead)
            }
        }
    }

    async fn extend(&self, lease: &Lease, by: Duration) -> Result<Lease> {
        validate::lease("by", by)?;
        let expires: Option<DateTime<Utc>> = sqlx::query_scalar(&self.inner.sql.job_extend)
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(micros(by))
            .fetch_optional(&self.inner.pool)
            .await
            .map_err(map)?;
        match expires {
            Some(expires_at) => Ok(Lease {
                expires_at,
                ..lease.clone()
            }),
            None => Err(self.lease_error(&self.inner.pool, lease).await),
        }
    }

    async fn release(&self, lease: &Lease) -> Result<()> {
        let q = sqlx::query(&self.inner.sql.job_release)
            .bind(lease.job_id.0)
            .bind(lease.token);
        self.fenced(q, lease).await?;
        self.inner.hub.notify(&lease.queue, 1);
        Ok(())
    }

    async fn rescue_expired(&self) -> Result<u64> {
        let rows: Vec<(String, String)> = sqlx::query_as(&self.inner.sql.job_rescue)
            .fetch_all(&self.inner.pool)
            .await
            .map_err(map)?;
        let mut pending: HashMap<&str, usize> = HashMap::new();
        for (queue, state) in &rows {
            if state == JobState::Pending.as_str() {
                *pending.entry(queue).or_default() += 1;
            }
        }
        for (queue, n) in pending {
            self.wake(queue, n).await;
        }
        if !rows.is_empty() {
            tracing::info!(target: LOG, rescued = rows.len(), "rescued jobs with expired leases");
        }
        Ok(rows.len() as u64)
    }

    async fn cancel(&self, id: JobId) -> Result<()> {
        let done = sqlx::query(&self.inner.sql.job_cancel)
            .bind(id.0)
            .execute(&self.inner.pool)
            .await
            .map_err(map)?;
        if done.rows_affected() == 0 {
            return Err(self.state_error(id, "cancel").await);
        }
        Ok(())
    }

    async fn retry(&self, id: JobId) -> Result<()> {
        let queue: Option<String> = sqlx::query_scalar(&self.inner.sql.job_retry)
            .bind(id.0)
            .fetch_optional(&self.inner.pool)
            .await
            .map_err(map)?;
        match queue {
            Some(queue) => {
                self.wake(&queue, 1).await;
                Ok(())
            }
            None => Err(self.state_error(id, "retry").await),
        }
    }

    async fn get(&self, id: JobId) -> Result<Option<Job>> {
        let row = sqlx::query(&self.inner.sql.job_get)
            .bind(id.0)
            .fetch_optional(&self.inner.pool)
            .await
            .map_err(map)?;
        row.map(|r| job_from_row(&r).map(|(job, _)| job))
            .transpose()
    }

    async fn list(&self, req: ListRequest) -> Result<Vec<Job>> {
        req.validate()?;
        let rows = sqlx::query(&self.inner.sql.job_list)
            .bind(req.queue.as_deref())
            .bind(req.state.map(|s| s.as_str()))
            .bind(i64::try_from(req.limit).unwrap_or(i64::MAX))
            .fetch_all(&self.inner.pool)
            .await
            .map_err(map)?;
        rows.iter()
            .map(|r| job_from_row(r).map(|(job, _)| job))
            .collect()
    }

    async fn stats(&self, queue: Option<&str>) -> Result<Vec<QueueStats>> {
        if let Some(q) = queue {
            validate::queue_name(q)?;
        }
        let rows: Vec<(String, i64, i64, i64, i64, i64, i64)> =
            sqlx::query_as(&self.inner.sql.job_stats)
                .bind(queue)
                .fetch_all(&self.inner.pool)
                .await
                .map_err(map)?;
        let mut stats: Vec<QueueStats> = rows
            .into_iter()
            .map(
                |(queue, available, scheduled, running, completed, dead, cancelled)| QueueStats {
                    queue,
                    available: count(available),
                    scheduled: count(scheduled),
                    running: count(running),
                    completed: count(completed),
                    dead: count(dead),
                    cancelled: count(cancelled),
                },
            )
            .collect();
        if let (Some(q), true) = (queue, stats.is_empty()) {
            stats.push(QueueStats {
                queue: q.to_owned(),
                ..QueueStats::default()
            });
        }
        Ok(stats)
    }

    async fn prune(&self, req: PruneRequest) -> Result<u64> {
        req.validate()?;
        let states: Vec<&str> = req.states.iter().map(|s| s.as_str()).collect();
        let done = sqlx::query(&self.inner.sql.job_prune)
            .bind(&states)
            .bind(micros(req.older_than))
            .bind(req.queue.as_deref())
            .execute(&self.inner.pool)
            .await
            .map_err(map)?;
        Ok(done.rows_affected())
    }

    async fn wait_for_work(&self, queue: &str, timeout: Duration) {
        let inner = &self.inner;
        inner
            .listener
            .ensure(queue, &inner.listen_pool, &inner.channel, &inner.hub);
        inner.hub.wait(queue, timeout).await;
    }

    async fn now(&self) -> Result<DateTime<Utc>> {
        sqlx::query_scalar(&self.inner.sql.now)
            .fetch_one(&self.inner.pool)
            .await
            .map_err(map)
    }
}
