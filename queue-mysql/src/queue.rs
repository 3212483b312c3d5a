//! [`MySqlQueue`]: the [`Queue`] implementation for MySQL and MariaDB.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::validate::{self, Limits};
use queue_core::{
    queue::{validate_ack_batch, validate_batch},
    Capabilities, ClaimStrategy, Dialect, Error, FailDecision, FailOutcome, Failure, Job, JobId,
    JobState, Lease, Leased, ListRequest, NewJob, PopRequest, PruneRequest, Queue, QueueStats,
    Result, RetryPolicy, WakeHub, Wakeups,
};
use serde_json::value::RawValue;
use sqlx::mysql::{MySqlArguments, MySqlConnection, MySqlPool, MySqlRow};
use sqlx::query::Query;
use sqlx::{Executor, MySql, Row, Transaction};
use uuid::Uuid;

use crate::builder::MySqlQueueBuilder;
use crate::{error, migrate};

/// The log target of this crate.
const LOG: &str = "queue::mysql";

/// Rows per multi-row INSERT (7 placeholders each, far below the protocol's 65,535).
const INSERT_CHUNK_ROWS: usize = 500;
/// Leases per `ack_batch` statement (3 placeholders each, under the 65,535 limit).
const ACK_CHUNK: usize = 20_000;
/// Expired leases rescued per statement.
const RESCUE_CHUNK: u64 = 1_000;
/// Rows deleted per `prune` statement.
const PRUNE_CHUNK: u64 = 5_000;
/// Optimistic claim: after a lost race, this many fully successful claims pass before the
/// claimer returns to the exact order.
const CONTENTION_MEMORY: u32 = 16;
/// Optimistic claim: most rounds of "read candidates, try to claim them" per `pop`.
const OPTIMISTIC_ROUNDS: usize = 8;

/// A durable job queue in a MySQL 8.0+ or MariaDB 10.6+ database (older servers with the
/// optimistic claim). Cheap to clone: clones share one pool.
#[derive(Clone)]
pub struct MySqlQueue {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for MySqlQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlQueue")
            .field("table_prefix", &self.inner.prefix)
            .field("capabilities", &self.inner.caps)
            .finish_non_exhaustive()
    }
}

/// What the server is, detected at connect.
#[derive(Clone, Debug)]
pub(crate) struct ServerInfo {
    pub(crate) version: String,
    pub(crate) dialect: Dialect,
    pub(crate) skip_locked: bool,
    pub(crate) max_packet: u64,
}

impl ServerInfo {
    pub(crate) async fn detect(pool: &MySqlPool) -> Result<Self> {
        let row = sqlx::query(&load(include_str!("../queries/server_info.sql"), ""))
            .fetch_one(pool)
            .await
            .map_err(error::map)?;
        let version: String = row.try_get_unchecked(0).map_err(error::map)?;
        let max_packet: u64 = row
            .try_get_unchecked::<i64, _>(1)
            .map(|v| v.max(0) as u64)
            .or_else(|_| row.try_get_unchecked::<u64, _>(1))
            .map_err(error::map)?;
        Ok(Self::parse(version, max_packet))
    }

    /// `8.0.36` is MySQL, `10.11.6-MariaDB-...` is MariaDB. SKIP LOCKED arrived in MySQL 8.0.1
    /// and MariaDB 10.6.
    pub(crate) fn parse(version: String, max_packet: u64) -> Self {
        let mariadb = version.to_ascii_lowercase().contains("mariadb");
        let mut parts = version
            .split(|c: char| !c.is_ascii_digit())
            .map(|p| p.parse::<u32>().unwrap_or(0));
        let major = parts.next().unwrap_or(0);
        let minor = parts.next().unwrap_or(0);
        let patch = parts.next().unwrap_or(0);
        let skip_locked = if mariadb {
            (major, minor) >= (10, 6)
        } else {
            (major, minor, patch) >= (8, 0, 1)
        };
        ServerInfo {
            dialect: if mariadb {
                Dialect::MariaDb
            } else {
                Dialect::MySql
            },
            version,
            skip_locked,
            max_packet,
        }
    }
}

/// A statement file with its comment lines dropped and the table prefix spliced in.
fn load(raw: &str, prefix: &str) -> String {
    raw.lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .replace("{prefix}", prefix)
}

/// `?, ?, ?` (placeholders only; the values are bound).
fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// Every statement, built once at connect with the validated prefix spliced in. Templates with
/// `{...}` markers get their variable-length placeholder lists at call time.
#[derive(Debug)]
pub(crate) struct Statements {
    insert: String,
    insert_head: String,
    insert_row: String,
    claim_select: String,
    claim_update: String,
    candidates: String,
    claim_optimistic: String,
    claim_optimistic_batch: String,
    lease_tokens: String,
    ack: String,
    ack_batch: String,
    state: String,
    state_locked: String,
    fail_retry: String,
    fail_dead: String,
    extend: String,
    release: String,
    expired: String,
    rescue: String,
    cancel: String,
    retry: String,
    get: String,
    list: String,
    stats: String,
    prune: String,
    prune_queue: String,
    db_now: String,
    drop_tables: String,
    pub(crate) migrate_lock: String,
    pub(crate) migrate_unlock: String,
    pub(crate) migrations_create: String,
    pub(crate) migrations_applied: String,
    pub(crate) migrations_record: String,
}

impl Statements {
    fn new(p: &str) -> Self {
        let insert = load(include_str!("../queries/job_insert.sql"), p);
        let (head, row) = insert
            .rsplit_once("VALUES")
            .map(|(h, r)| (format!("{h}VALUES "), r.trim().to_owned()))
            .unwrap_or_default();
        Statements {
            insert_head: head,
            insert_row: row,
            insert,
            claim_select: load(include_str!("../queries/job_claim_select.sql"), p),
            claim_update: load(include_str!("../queries/job_claim_update.sql"), p),
            candidates: load(include_str!("../queries/job_candidates.sql"), p),
            claim_optimistic: load(include_str!("../queries/job_claim_optimistic.sql"), p),
            claim_optimistic_batch: load(
                include_str!("../queries/job_claim_optimistic_batch.sql"),
                p,
            ),
            lease_tokens: load(include_str!("../queries/job_lease_tokens.sql"), p),
            ack: load(include_str!("../queries/job_ack.sql"), p),
            ack_batch: load(include_str!("../queries/job_ack_batch.sql"), p),
            state: load(include_str!("../queries/job_state.sql"), p),
            state_locked: load(include_str!("../queries/job_state_locked.sql"), p),
            fail_retry: load(include_str!("../queries/job_fail_retry.sql"), p),
            fail_dead: load(include_str!("../queries/job_fail_dead.sql"), p),
            extend: load(include_str!("../queries/job_extend.sql"), p),
            release: load(include_str!("../queries/job_release.sql"), p),
            expired: load(include_str!("../queries/job_expired.sql"), p),
            rescue: load(include_str!("../queries/job_rescue.sql"), p),
            cancel: load(include_str!("../queries/job_cancel.sql"), p),
            retry: load(include_str!("../queries/job_retry.sql"), p),
            get: load(include_str!("../queries/job_get.sql"), p),
            list: load(include_str!("../queries/job_list.sql"), p),
            stats: load(include_str!("../queries/job_stats.sql"), p),
            prune: load(include_str!("../queries/job_prune.sql"), p),
            prune_queue: load(include_str!("../queries/job_prune_queue.sql"), p),
            db_now: load(include_str!("../queries/db_now.sql"), p),
            drop_tables: load(include_str!("../queries/drop_tables.sql"), p),
            migrate_lock: load(include_str!("../queries/migrate_lock.sql"), p),
            migrate_unlock: load(include_str!("../queries/migrate_unlock.sql"), p),
            migrations_create: load(include_str!("../queries/migrations_create.sql"), p),
            migrations_applied: load(include_str!("../queries/migrations_applied.sql"), p),
            migrations_record: load(include_str!("../queries/migrations_record.sql"), p),
        }
    }

    /// A multi-row INSERT of `rows` rows.
    fn insert_rows(&self, rows: usize) -> String {
        let mut sql =
            String::with_capacity(self.insert_head.len() + rows * (self.insert_row.len() + 2));
        sql.push_str(&self.insert_head);
        for i in 0..rows {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&self.insert_row);
        }
        sql
    }

    fn claim_update(&self, rows: usize) -> String {
        self.claim_update
            .replace("{token_cases}", &vec!["WHEN ? THEN ?"; rows].join(" "))
            .replace("{ids}", &placeholders(rows))
    }

    fn claim_optimistic_batch(&self, rows: usize) -> String {
        let cases = vec!["WHEN ? THEN ?"; rows].join(" ");
        self.claim_optimistic_batch
            .replace("{token_cases}", &cases)
            .replace("{version_cases}", &cases)
            .replace("{ids}", &placeholders(rows))
    }

    fn rescue(&self, rows: usize) -> String {
        self.rescue.replace("{ids}", &placeholders(rows))
    }

    fn lease_tokens(&self, rows: usize) -> String {
        self.lease_tokens.replace("{ids}", &placeholders(rows))
    }

    fn ack_batch(&self, rows: usize) -> String {
        self.ack_batch
            .replace("{ids}", &placeholders(rows))
            .replace("{token_cases}", &vec!["WHEN ? THEN ?"; rows].join(" "))
    }

    fn prune(&self, states: usize, one_queue: bool) -> String {
        let tpl = if one_queue {
            &self.prune_queue
        } else {
            &self.prune
        };
        tpl.replace("{states}", &placeholders(states))
    }
}

/// The shared state behind every clone of a [`MySqlQueue`].
pub(crate) struct Inner {
    pub(crate) pool: MySqlPool,
    pub(crate) prefix: String,
    pub(crate) sql: Statements,
    caps: Capabilities,
    max_packet: u64,
    hub: WakeHub,
    retry_policy: RetryPolicy,
    limits: Limits,
    lock_retries: u32,
    /// Optimistic claim: how many more claims pick at random after the last lost race.
    contention: AtomicU32,
}

impl Inner {
    pub(crate) fn new(
        pool: MySqlPool,
        prefix: &str,
        server: ServerInfo,
        claim: ClaimStrategy,
        retry_policy: RetryPolicy,
        limits: Limits,
        lock_retries: u32,
    ) -> Self {
        Inner {
            pool,
            prefix: prefix.to_owned(),
            sql: Statements::new(prefix),
            caps: Capabilities {
                dialect: server.dialect,
                claim,
                wakeups: Wakeups::InProcess,
                time_precision: Duration::from_micros(1),
                transactions: true,
                server_version: Some(server.version),
                limits: limits.clone(),
            },
            max_packet: server.max_packet,
            hub: WakeHub::new(),
            retry_policy,
            limits,
            lock_retries,
            contention: AtomicU32::new(0),
        }
    }
}

/// A duration as whole microseconds (the column precision), saturating.
fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

fn chrono_micros(d: Duration) -> chrono::Duration {
    chrono::Duration::microseconds(micros(d))
}

fn decode_err(msg: String) -> sqlx::Error {
    sqlx::Error::Decode(msg.into())
}

fn text(row: &MySqlRow, col: &str) -> Result<String, sqlx::Error> {
    // Columns with a binary collation carry the BINARY flag, which the driver's type check
    // reads as "bytes"; the text is UTF-8 all the same.
    row.try_get_unchecked::<String, _>(col)
}

fn opt_text(row: &MySqlRow, col: &str) -> Result<Option<String>, sqlx::Error> {
    row.try_get_unchecked::<Option<String>, _>(col)
}

fn payload(row: &MySqlRow) -> Result<Box<RawValue>, sqlx::Error> {
    RawValue::from_string(text(row, "payload")?)
        .map_err(|e| decode_err(format!("stored payload is not JSON: {e}")))
}

fn job_from_row(row: &MySqlRow) -> Result<Job, sqlx::Error> {
    let state: String = text(row, "state")?;
    Ok(Job {
        id: JobId(row.try_get("id")?),
        queue: text(row, "queue")?,
        payload: payload(row)?,
        priority: row.try_get("priority")?,
        state: state
            .parse()
            .map_err(|_| decode_err(format!("unknown job state {state:?}")))?,
        attempts: row.try_get("attempts")?,
        max_attempts: row.try_get("max_attempts")?,
        run_at: row.try_get("run_at")?,
        lease_expires_at: row.try_get("lease_expires_at")?,
        worker: opt_text(row, "worker")?,
        last_error: opt_text(row, "last_error")?,
        dedup_key: opt_text(row, "dedup_key")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}

/// A due pending row read by a claim, with its version and the database's now.
struct Candidate {
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
    ) -> Leased {
        let mut job = self.job;
        job.state = JobState::Running;
        job.attempts += 1;
        job.lease_expires_at = Some(expires_at);
        job.worker = Some(worker.to_owned());
        job.updated_at = now;
        let lease = Lease {
            job_id: job.id,
            queue: job.queue.clone(),
            token,
            expires_at,
            attempt: job.attempts,
            max_attempts: job.max_attempts,
        };
        Leased { job, lease }
    }
}

/// A value bound ahead of the fence of a transition.
enum Arg<'a> {
    Int(i64),
    Text(&'a str),
    Time(DateTime<Utc>),
}

impl<'a> Arg<'a> {
    fn bind<'q>(&self, q: Query<'q, MySql, MySqlArguments>) -> Query<'q, MySql, MySqlArguments>
    where
        'a: 'q,
    {
        match *self {
            Arg::Int(v) => q.bind(v),
            Arg::Text(v) => q.bind(v),
            Arg::Time(v) => q.bind(v),
        }
    }
}

/// Binds one job's INSERT values, in the order of `queries/job_insert.sql`.
fn bind_job<'q>(
    q: Query<'q, MySql, MySqlArguments>,
    job: &'q NewJob,
    delay: Duration,
) -> Query<'q, MySql, MySqlArguments> {
    q.bind(job.id().0)
        .bind(job.queue())
        .bind(job.payload_json())
        .bind(job.priority_value())
        .bind(job.max_attempts_value())
        .bind(micros(delay))
        .bind(job.dedup_key_value())
}

impl MySqlQueue {
    /// A builder for a queue at `url` (`mysql://user:pass@host:3306/db`; `mariadb://` is
    /// accepted too).
    pub fn builder(url: impl Into<String>) -> MySqlQueueBuilder {
        MySqlQueueBuilder::new(url)
    }

    /// The connection pool, e.g. to begin a transaction for [`MySqlQueue::push_in_tx`].
    pub fn pool(&self) -> &MySqlPool {
        &self.inner.pool
    }

    /// The table prefix in use.
    pub fn table_prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// The name of the jobs table (`{prefix}jobs`).
    pub fn jobs_table(&self) -> String {
        format!("{}jobs", self.inner.prefix)
    }

    /// Drops this queue's tables, losing every job (for tests and uninstalling).
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    pub async fn drop_tables(&self) -> Result<()> {
        (&self.inner.pool)
            .execute(self.inner.sql.drop_tables.as_str())
            .await
            .map_err(error::map)?;
        Ok(())
    }

    /// Wakes this queue value's workers waiting on `queue`, e.g. after committing a transaction
    /// that pushed with [`MySqlQueue::push_in_tx`] (otherwise they notice at their next poll).
    pub fn notify_pushed(&self, queue: &str, jobs: usize) {
        self.inner.hub.notify(queue, jobs);
    }

    /// Stores `job` inside the caller's transaction: it exists iff the transaction commits.
    /// Workers of this process notice it at their next poll, or at once after
    /// [`MySqlQueue::notify_pushed`].
    ///
    /// # Errors
    /// As [`Queue::push`].
    pub async fn push_in_tx(&self, tx: &mut Transaction<'_, MySql>, job: NewJob) -> Result<JobId> {
        job.validate(&self.inner.limits)?;
        let id = job.id();
        let jobs = std::slice::from_ref(&job);
        self.insert(&mut *tx, jobs)
            .await
            .map_err(|e| error::map_push(e, jobs))?;
        Ok(id)
    }

    /// Stores `jobs` inside the caller's transaction: all of them iff the transaction commits.
    /// A failed batch stores nothing (a savepoint is rolled back) and leaves the caller's own
    /// writes in place.
    ///
    /// # Errors
    /// As [`Queue::push_batch`].
    pub async fn push_batch_in_tx(
        &self,
        tx: &mut Transaction<'_, MySql>,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<JobId>> {
        validate_batch(&jobs, &self.inner.limits)?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        check_batch_dedup(&jobs)?;
        // A savepoint makes the batch all-or-nothing even when it spans several statements,
        // without undoing the caller's own writes.
        let mut savepoint = sqlx::Acquire::begin(&mut *tx).await.map_err(error::map)?;
        self.insert(&mut savepoint, &jobs)
            .await
            .map_err(|e| error::map_push(e, &jobs))?;
        savepoint.commit().await.map_err(error::map)?;
        Ok(jobs.iter().map(NewJob::id).collect())
    }

    /// Completes the leased job inside the caller's transaction, so the completion commits
    /// together with the handler's own writes (exactly-once effects on this database).
    ///
    /// # Errors
    /// [`Error::LeaseLost`] or [`Error::Cancelled`] when the lease is no longer current: the
    /// caller must roll back its transaction.
    pub async fn complete_in_tx(
        &self,
        tx: &mut Transaction<'_, MySql>,
        lease: &Lease,
    ) -> Result<()> {
        let conn: &mut MySqlConnection = tx;
        let done = sqlx::query(&self.inner.sql.ack)
            .bind(lease.job_id.0)
            .bind(lease.token)
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
        if done.rows_affected() == 1 {
            return Ok(());
        }
        let state: Option<String> = sqlx::query(&self.inner.sql.state_locked)
            .bind(lease.job_id.0)
            .fetch_optional(&mut *conn)
            .await
            .map_err(error::map)?
            .map(|r| text(&r, "state"))
            .transpose()
            .map_err(error::map)?;
        Err(lost(lease, state.as_deref()))
    }

    /// Inserts jobs in multi-row statements of at most [`INSERT_CHUNK_ROWS`] rows and about
    /// half of `max_allowed_packet`, on one connection (the caller owns the transaction).
    async fn insert(&self, conn: &mut MySqlConnection, jobs: &[NewJob]) -> Result<(), sqlx::Error> {
        let client_now = Utc::now();
        let budget = (self.inner.max_packet / 2).max(1 << 20) as usize;
        let mut start = 0;
        while start < jobs.len() {
            let mut end = start;
            let mut bytes = 0;
            while end < jobs.len() && end - start < INSERT_CHUNK_ROWS {
                let j = &jobs[end];
                let size = j.payload_json().len()
                    + j.queue().len()
                    + j.dedup_key_value().map_or(0, str::len)
                    + 96;
                if end > start && bytes + size > budget {
                    break;
                }
                bytes += size;
                end += 1;
            }
            let chunk = &jobs[start..end];
            let sql = if chunk.len() == 1 {
                None
            } else {
                Some(self.inner.sql.insert_rows(chunk.len()))
            };
            let mut q = sqlx::query(sql.as_deref().unwrap_or(&self.inner.sql.insert));
            for job in chunk {
                q = bind_job(q, job, job.delay_from(client_now));
            }
            q.execute(&mut *conn).await?;
            start = end;
        }
        Ok(())
    }

    async fn state_of(&self, id: JobId) -> Result<Option<JobState>> {
        let row = sqlx::query(&self.inner.sql.state)
            .bind(id.0)
            .fetch_optional(&self.inner.pool)
            .await
            .map_err(error::map)?;
        match row {
            None => Ok(None),
            Some(r) => {
                let s = text(&r, "state").map_err(error::map)?;
                s.parse().map(Some)
            }
        }
    }

    /// Why a fenced transition changed nothing.
    async fn lost_lease(&self, lease: &Lease) -> Error {
        match self.state_of(lease.job_id).await {
            Ok(state) => lost(lease, state.map(|s| s.as_str())),
            Err(e) => e,
        }
    }

    /// Runs a fenced transition (`UPDATE ... WHERE id = ? AND lease_token = ? AND
    /// state = 'running'`, bound after `q`'s own values).
    async fn fenced(&self, sql: &str, args: &[Arg<'_>], lease: &Lease) -> Result<()> {
        let done = self
            .with_lock_retry("transition", || {
                let mut q = sqlx::query(sql);
                for a in args {
                    q = a.bind(q);
                }
                q.bind(lease.job_id.0)
                    .bind(lease.token)
                    .execute(&self.inner.pool)
            })
            .await?;
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(self.lost_lease(lease).await)
        }
    }

    /// Runs `op`, retrying deadlocks (1213) and lock wait timeouts (1205) with jittered
    /// exponential backoff, then maps the error. `op` must be one autocommit statement or a
    /// whole transaction of ours: a deadlock rolls back the transaction, a lock wait timeout
    /// the statement, and `op` starts over either way.
    async fn with_lock_retry<T, F, Fut>(&self, what: &'static str, op: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, sqlx::Error>>,
    {
        self.lock_retried(what, op).await.map_err(error::map)
    }

    /// [`MySqlQueue::with_lock_retry`], leaving the final error unmapped.
    async fn lock_retried<T, F, Fut>(&self, what: &'static str, mut op: F) -> Result<T, sqlx::Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, sqlx::Error>>,
    {
        let mut attempt = 0;
        loop {
            match op().await {
                Err(e) if error::is_lock_conflict(&e) && attempt < self.inner.lock_retries => {
                    attempt += 1;
                    let base = 2u64.saturating_pow(attempt.min(10)) as f64;
                    let wait = Duration::from_secs_f64(base * (0.5 + fastrand::f64()) / 1000.0);
                    tracing::debug!(target: LOG, what, attempt, error = %e, ?wait, "lock conflict, retrying");
                    tokio::time::sleep(wait).await;
                }
                other => return other,
            }
        }
    }

    /// SkipLocked claim: one READ COMMITTED transaction, a locking SELECT that skips rows other
    /// claimers hold, then one UPDATE of exactly those rows.
    async fn claim_skip_locked(&self, req: &PopRequest) -> Result<Vec<Leased>, sqlx::Error> {
        let sql = &self.inner.sql;
        let mut tx = self.inner.pool.begin().await?;
        let rows = sqlx::query(&sql.claim_select)
            .bind(&req.queue)
            .bind(req.limit as u64)
            .fetch_all(&mut *tx)
            .await?;
        if rows.is_empty() {
            tx.commit().await?;
            return Ok(Vec::new());
        }
        let candidates = rows
            .iter()
            .map(Candidate::from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let now = candidates[0].db_now;
        let expires_at = now + chrono_micros(req.lease);
        let tokens: Vec<Uuid> = candidates.iter().map(|_| Uuid::new_v4()).collect();
        let update = sql.claim_update(candidates.len());
        let mut q = sqlx::query(&update);
        for (c, token) in candidates.iter().zip(&tokens) {
            q = q.bind(c.job.id.0).bind(*token);
        }
        q = q.bind(expires_at).bind(&req.worker).bind(now);
        for c in &candidates {
            q = q.bind(c.job.id.0);
        }
        let done = q.execute(&mut *tx).await?;
        if done.rows_affected() != candidates.len() as u64 {
            // Cannot happen while the rows are locked; refuse rather than hand out a bad lease.
            return Err(sqlx::Error::Protocol(format!(
                "claim updated {} of {} locked rows",
                done.rows_affected(),
                candidates.len()
            )));
        }
        tx.commit().await?;
        Ok(candidates
            .into_iter()
            .zip(tokens)
            .map(|(c, token)| c.into_leased(token, now, expires_at, &req.worker))
            .collect())
    }

    /// Optimistic claim: read due candidates without locks, then claim them with an autocommit
    /// UPDATE guarded by each row's version; a row changed = claimed (one candidate: one row
    /// changed; several: one statement, and the rows carrying our tokens are ours). A claimer
    /// that lost races lately picks at random among a wider window of due rows, so concurrent
    /// claimers spread out instead of all chasing the head of the queue; an uncontended claimer
    /// keeps the exact claim order.
    async fn claim_optimistic(&self, req: &PopRequest) -> Result<Vec<Leased>> {
        let mut claimed = Vec::new();
        for _ in 0..OPTIMISTIC_ROUNDS {
            let want = req.limit - claimed.len();
            let contended = self.inner.contention.load(AtomicOrdering::Relaxed) > 0;
            let fetch = if contended { want * 2 + 16 } else { want };
            let rows = sqlx::query(&self.inner.sql.candidates)
                .bind(&req.queue)
                .bind(fetch as u64)
                .fetch_all(&self.inner.pool)
                .await
                .map_err(error::map)?;
            if rows.is_empty() {
                break;
            }
            let mut candidates = rows
                .iter()
                .map(Candidate::from_row)
                .collect::<Result<Vec<_>, _>>()
                .map_err(error::map)?;
            if contended {
                fastrand::shuffle(&mut candidates);
            }
            candidates.truncate(want);
            let tried = candidates.len();
            let won = self.claim_versions(req, candidates).await?;
            let all_won = won.len() == tried;
            claimed.extend(won);
            if all_won {
                // Decay: a claimer that stops losing returns to the exact order.
                let _ = self.inner.contention.fetch_update(
                    AtomicOrdering::Relaxed,
                    AtomicOrdering::Relaxed,
                    |c| c.checked_sub(1),
                );
                // Every row tried was won: either the limit is reached or nothing more was due.
                break;
            } else {
                self.inner
                    .contention
                    .store(CONTENTION_MEMORY, AtomicOrdering::Relaxed);
            }
            if claimed.len() >= req.limit {
                break;
            }
        }
        Ok(claimed)
    }

    /// Claims `candidates` if their versions are unchanged; returns the ones won, in order.
    async fn claim_versions(
        &self,
        req: &PopRequest,
        candidates: Vec<Candidate>,
    ) -> Result<Vec<Leased>> {
        let Some(first) = candidates.first() else {
            return Ok(Vec::new());
        };
        let sql = &self.inner.sql;
        let pool = &self.inner.pool;
        let now = first.db_now;
        let expires_at = now + chrono_micros(req.lease);
        let tokens: Vec<Uuid> = candidates.iter().map(|_| Uuid::new_v4()).collect();
        let done = if candidates.len() == 1 {
            sqlx::query(&sql.claim_optimistic)
                .bind(tokens[0])
                .bind(expires_at)
                .bind(&req.worker)
                .bind(now)
                .bind(first.job.id.0)
                .bind(first.version)
                .execute(pool)
                .await
        } else {
            let update = sql.claim_optimistic_batch(candidates.len());
            let mut q = sqlx::query(&update);
            for (c, token) in candidates.iter().zip(&tokens) {
                q = q.bind(c.job.id.0).bind(*token);
            }
            q = q.bind(expires_at).bind(&req.worker).bind(now);
            for c in &candidates {
                q = q.bind(c.job.id.0);
            }
            for c in &candidates {
                q = q.bind(c.job.id.0).bind(c.version);
            }
            q.execute(pool).await
        };
        let changed = match done {
            Ok(d) => d.rows_affected(),
            // The autocommit statement was rolled back as a whole: nothing is ours.
            Err(e) if error::is_lock_conflict(&e) => 0,
            Err(e) => return Err(error::map(e)),
        };
        let won: Vec<bool> = if changed == candidates.len() as u64 {
            vec![true; candidates.len()]
        } else if changed == 0 {
            vec![false; candidates.len()]
        } else {
            let lookup = sql.lease_tokens(candidates.len());
            let mut q = sqlx::query(&lookup);
            for c in &candidates {
                q = q.bind(c.job.id.0);
            }
            let current: HashMap<Uuid, Option<Uuid>> = q
                .fetch_all(pool)
                .await
                .map_err(error::map)?
                .iter()
                .map(|r| Ok((r.try_get("id")?, r.try_get("lease_token")?)))
                .collect::<Result<_, sqlx::Error>>()
                .map_err(error::map)?;
            candidates
                .iter()
                .zip(&tokens)
                .map(|(c, t)| current.get(&c.job.id.0) == Some(&Some(*t)))
                .collect()
        };
        Ok(candidates
            .into_iter()
            .zip(tokens)
            .zip(won)
            .filter(|(_, won)| *won)
            .map(|((c, token), _)| c.into_leased(token, now, expires_at, &req.worker))
            .collect())
    }
}

/// The error for a fenced transition that matched no row, given the job's current state.
fn lost(lease: &Lease, state: Option<&str>) -> Error {
    if state == Some(JobState::Cancelled.as_str()) {
        Error::Cancelled { job: lease.job_id }
    } else {
        Error::LeaseLost { job: lease.job_id }
    }
}

/// Two jobs of one batch with the same queue and dedup key: the batch would clash with itself.
fn check_batch_dedup(jobs: &[NewJob]) -> Result<()> {
    let mut seen = HashSet::new();
    for j in jobs {
        if let Some(k) = j.dedup_key_value() {
            if !seen.insert((j.queue(), k)) {
                return Err(Error::Duplicate {
                    queue: j.queue().to_owned(),
                    dedup_key: k.to_owned(),
                });
            }
        }
    }
    Ok(())
}

#[async_trait]
impl Queue for MySqlQueue {
    fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    async fn migrate(&self) -> Result<()> {
        migrate::run(&self.inner).await
    }

    async fn push(&self, job: NewJob) -> Result<JobId> {
        job.validate(&self.inner.limits)?;
        let id = job.id();
        let jobs = std::slice::from_ref(&job);
        self.lock_retried("push", || async {
            let mut conn = self.inner.pool.acquire().await?;
            self.insert(&mut conn, jobs).await
        })
        .await
        .map_err(|e| error::map_push(e, jobs))?;
        self.inner.hub.notify(job.queue(), 1);
        tracing::debug!(target: LOG, job = %id, queue = job.queue(), "pushed");
        Ok(id)
    }

    async fn push_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        validate_batch(&jobs, &self.inner.limits)?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        check_batch_dedup(&jobs)?;
        self.lock_retried("push_batch", || async {
            let mut tx = self.inner.pool.begin().await?;
            self.insert(&mut tx, &jobs).await?;
            tx.commit().await
        })
        .await
        .map_err(|e| error::map_push(e, &jobs))?;
        let mut per_queue: HashMap<&str, usize> = HashMap::new();
        for j in &jobs {
            *per_queue.entry(j.queue()).or_default() += 1;
        }
        for (queue, n) in per_queue {
            self.inner.hub.notify(queue, n);
        }
        tracing::debug!(target: LOG, jobs = jobs.len(), "pushed batch");
        Ok(jobs.iter().map(NewJob::id).collect())
    }

    async fn pop(&self, req: PopRequest) -> Result<Vec<Leased>> {
        req.validate(&self.inner.limits)?;
        let claimed = match self.inner.caps.claim {
            ClaimStrategy::Optimistic => self.claim_optimistic(&req).await?,
            _ => {
                self.with_lock_retry("claim", || self.claim_skip_locked(&req))
                    .await?
            }
        };
        if !claimed.is_empty() {
            tracing::debug!(target: LOG, queue = %req.queue, jobs = claimed.len(), "claimed");
        }
        Ok(claimed)
    }

    async fn ack(&self, lease: &Lease) -> Result<()> {
        self.fenced(&self.inner.sql.ack, &[], lease).await
    }

    async fn ack_batch(&self, leases: &[Lease]) -> Result<u64> {
        validate_ack_batch(leases, &self.inner.limits)?;
        if leases.is_empty() {
            return Ok(0);
        }
        // One statement unless the leases would need more than 65,535 placeholders.
        let mut total = 0;
        for chunk in leases.chunks(ACK_CHUNK) {
            let sql = self.inner.sql.ack_batch(chunk.len());
            let done = self
                .with_lock_retry("ack_batch", || {
                    let mut q = sqlx::query(&sql);
                    for l in chunk {
                        q = q.bind(l.job_id.0);
                    }
                    for l in chunk {
                        q = q.bind(l.job_id.0).bind(l.token);
                    }
                    q.execute(&self.inner.pool)
                })
                .await?;
            total += done.rows_affected();
        }
        Ok(total)
    }

    async fn fail(&self, lease: &Lease, failure: Failure) -> Result<FailOutcome> {
        let message = validate::truncate_error(&failure.message);
        match self.inner.retry_policy.decide(lease, &failure) {
            FailDecision::Retry(after) => {
                let args = [Arg::Int(micros(after)), Arg::Text(message)];
                self.fenced(&self.inner.sql.fail_retry, &args, lease)
                    .await?;
                Ok(FailOutcome::Retrying { after })
            }
            FailDecision::Dead => {
                let args = [Arg::Text(message)];
                self.fenced(&self.inner.sql.fail_dead, &args, lease).await?;
                Ok(FailOutcome::Dead)
            }
        }
    }

    async fn extend(&self, lease: &Lease, by: Duration) -> Result<Lease> {
        validate::lease("by", by)?;
        let now = self.now().await?;
        let expires_at = now + chrono_micros(by);
        let args = [Arg::Time(expires_at), Arg::Time(now)];
        self.fenced(&self.inner.sql.extend, &args, lease).await?;
        Ok(Lease {
            expires_at,
            ..lease.clone()
        })
    }

    async fn release(&self, lease: &Lease) -> Result<()> {
        self.fenced(&self.inner.sql.release, &[], lease).await?;
        self.inner.hub.notify(&lease.queue, 1);
        Ok(())
    }

    async fn rescue_expired(&self) -> Result<u64> {
        let mut total = 0;
        loop {
            let ids: Vec<Uuid> = sqlx::query_scalar(&self.inner.sql.expired)
                .bind(RESCUE_CHUNK)
                .fetch_all(&self.inner.pool)
                .await
                .map_err(error::map)?;
            if ids.is_empty() {
                break;
            }
            let sql = self.inner.sql.rescue(ids.len());
            let n = self
                .with_lock_retry("rescue", || {
                    let mut q = sqlx::query(&sql);
                    for id in &ids {
                        q = q.bind(*id);
                    }
                    q.execute(&self.inner.pool)
                })
                .await?
                .rows_affected();
            total += n;
            if (ids.len() as u64) < RESCUE_CHUNK {
                break;
            }
        }
        if total > 0 {
            tracing::info!(target: LOG, jobs = total, "rescued jobs with expired leases");
        }
        Ok(total)
    }

    async fn cancel(&self, id: JobId) -> Result<()> {
        let done = self
            .with_lock_retry("cancel", || {
                sqlx::query(&self.inner.sql.cancel)
                    .bind(id.0)
                    .execute(&self.inner.pool)
            })
            .await?;
        if done.rows_affected() == 1 {
            return Ok(());
        }
        match self.state_of(id).await? {
            None => Err(Error::NotFound { job: id }),
            Some(state) => Err(Error::InvalidState {
                job: id,
                state,
                operation: "cancel",
            }),
        }
    }

    async fn retry(&self, id: JobId) -> Result<()> {
        let done = self
            .lock_retried("retry", || {
                sqlx::query(&self.inner.sql.retry)
                    .bind(id.0)
                    .execute(&self.inner.pool)
            })
            .await;
        match done {
            Ok(d) if d.rows_affected() == 1 => {
                if let Some(job) = self.get(id).await? {
                    self.inner.hub.notify(&job.queue, 1);
                }
                Ok(())
            }
            Ok(_) => match self.state_of(id).await? {
                None => Err(Error::NotFound { job: id }),
                Some(state) => Err(Error::InvalidState {
                    job: id,
                    state,
                    operation: "retry",
                }),
            },
            Err(e) if error::is_dedup_violation(&e) => match self.get(id).await? {
                Some(job) => Err(Error::Duplicate {
                    queue: job.queue,
                    dedup_key: job.dedup_key.unwrap_or_default(),
                }),
                None => Err(error::map(e)),
            },
            Err(e) => Err(error::map(e)),
        }
    }

    async fn get(&self, id: JobId) -> Result<Option<Job>> {
        sqlx::query(&self.inner.sql.get)
            .bind(id.0)
            .fetch_optional(&self.inner.pool)
            .await
            .map_err(error::map)?
            .map(|r| job_from_row(&r))
            .transpose()
            .map_err(error::map)
    }

    async fn list(&self, req: ListRequest) -> Result<Vec<Job>> {
        req.validate()?;
        let state = req.state.map(|s| s.as_str());
        sqlx::query(&self.inner.sql.list)
            .bind(req.queue.as_deref())
            .bind(req.queue.as_deref())
            .bind(state)
            .bind(state)
            .bind(req.limit as u64)
            .fetch_all(&self.inner.pool)
            .await
            .map_err(error::map)?
            .iter()
            .map(job_from_row)
            .collect::<Result<_, _>>()
            .map_err(error::map)
    }

    async fn stats(&self, queue: Option<&str>) -> Result<Vec<QueueStats>> {
        if let Some(q) = queue {
            validate::queue_name(q)?;
        }
        let rows = sqlx::query(&self.inner.sql.stats)
            .bind(queue)
            .bind(queue)
            .fetch_all(&self.inner.pool)
            .await
            .map_err(error::map)?;
        let count = |r: &MySqlRow, c: &str| -> Result<u64> {
            r.try_get::<Option<i64>, _>(c)
                .map(|v| v.unwrap_or(0).max(0) as u64)
                .map_err(error::map)
        };
        let mut out = rows
            .iter()
            .map(|r| {
                Ok(QueueStats {
                    queue: text(r, "queue").map_err(error::map)?,
                    available: count(r, "available")?,
                    scheduled: count(r, "scheduled")?,
                    running: count(r, "running")?,
                    completed: count(r, "completed")?,
                    dead: count(r, "dead")?,
                    cancelled: count(r, "cancelled")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if let (Some(q), true) = (queue, out.is_empty()) {
            out.push(QueueStats {
                queue: q.to_owned(),
                ..QueueStats::default()
            });
        }
        Ok(out)
    }

    async fn prune(&self, req: PruneRequest) -> Result<u64> {
        req.validate()?;
        let mut states: Vec<&str> = req.states.iter().map(|s| s.as_str()).collect();
        states.sort_unstable();
        states.dedup();
        let sql = self.inner.sql.prune(states.len(), req.queue.is_some());
        let mut total = 0;
        loop {
            let mut q = sqlx::query(&sql);
            for s in &states {
                q = q.bind(*s);
            }
            q = q.bind(micros(req.older_than));
            if let Some(queue) = &req.queue {
                q = q.bind(queue.as_str());
            }
            let n = q
                .bind(PRUNE_CHUNK)
                .execute(&self.inner.pool)
                .await
                .map_err(error::map)?
                .rows_affected();
            total += n;
            if n < PRUNE_CHUNK {
                break;
            }
        }
        Ok(total)
    }

    async fn wait_for_work(&self, queue: &str, timeout: Duration) {
        self.inner.hub.wait(queue, timeout).await;
    }

    async fn now(&self) -> Result<DateTime<Utc>> {
        sqlx::query_scalar(&self.inner.sql.db_now)
            .fetch_one(&self.inner.pool)
            .await
            .map_err(error::map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_detection() {
        let m = ServerInfo::parse("10.11.6-MariaDB-0+deb12u1".into(), 0);
        assert_eq!((m.dialect, m.skip_locked), (Dialect::MariaDb, true));
        let m = ServerInfo::parse("10.5.23-MariaDB".into(), 0);
        assert_eq!((m.dialect, m.skip_locked), (Dialect::MariaDb, false));
        let m = ServerInfo::parse("8.0.36".into(), 0);
        assert_eq!((m.dialect, m.skip_locked), (Dialect::MySql, true));
        let m = ServerInfo::parse("8.0.0-dmr".into(), 0);
        assert!(!m.skip_locked);
        let m = ServerInfo::parse("5.7.44-log".into(), 0);
        assert_eq!((m.dialect, m.skip_locked), (Dialect::MySql, false));
        let m = ServerInfo::parse("9.1.0".into(), 0);
        assert!(m.skip_locked);
    }

    #[test]
    fn statements_are_prefixed_and_placeholder_only() {
        let s = Statements::new("t_");
        assert!(s.claim_select.contains("FROM t_jobs"));
        assert!(!s.claim_select.contains("--"));
        let u = s.claim_update(2);
        assert!(u.contains("CASE id WHEN ? THEN ? WHEN ? THEN ? END"));
        assert!(u.contains("id IN (?, ?)"));
        let ins = s.insert_rows(3);
        assert_eq!(ins.matches("UTC_TIMESTAMP(6)").count(), 9);
        assert_eq!(ins.matches('?').count(), 21);
        assert!(s.ack_batch(2).contains("id IN (?, ?)"));
        assert!(s
            .ack_batch(2)
            .contains("CASE id WHEN ? THEN ? WHEN ? THEN ? END"));
        assert!(s.prune(3, true).contains("state IN (?, ?, ?)"));
    }
}
