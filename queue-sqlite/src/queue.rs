//! The [`Queue`] implementation on SQLite.
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

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
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
use sqlx::sqlite::{SqliteConnection, SqlitePool, SqliteRow};
use sqlx::{Row, Sqlite, Transaction};
use uuid::Uuid;

use crate::builder::SqliteQueueBuilder;
use crate::error::{self, db};
use crate::migrate;
use crate::LOG_TARGET;

/// The statements, one per file under `queries/`.
pub(crate) mod sql {
    pub(crate) const JOB_INSERT: &str = include_str!("../queries/job_insert.sql");
    pub(crate) const JOB_CLAIM: &str = include_str!("../queries/job_claim.sql");
    pub(crate) const JOB_CANDIDATES: &str = include_str!("../queries/job_candidates.sql");
    pub(crate) const JOB_CLAIM_ONE: &str = include_str!("../queries/job_claim_one.sql");
    pub(crate) const JOB_ACK: &str = include_str!("../queries/job_ack.sql");
    pub(crate) const JOB_ACK_MANY: &str = include_str!("../queries/job_ack_many.sql");
    pub(crate) const JOB_FAIL_RETRY: &str = include_str!("../queries/job_fail_retry.sql");
    pub(crate) const JOB_FAIL_DEAD: &str = include_str!("../queries/job_fail_dead.sql");
    pub(crate) const JOB_EXTEND: &str = include_str!("../queries/job_extend.sql");
    pub(crate) const JOB_RELEASE: &str = include_str!("../queries/job_release.sql");
    pub(crate) const JOB_STATE: &str = include_str!("../queries/job_lease_state.sql");
    pub(crate) const JOB_RESCUE: &str = include_str!("../queries/job_rescue.sql");
    pub(crate) const JOB_CANCEL: &str = include_str!("../queries/job_cancel.sql");
    pub(crate) const JOB_RETRY: &str = include_str!("../queries/job_retry.sql");
    pub(crate) const JOB_GET: &str = include_str!("../queries/job_get.sql");
    pub(crate) const JOB_LIST: &str = include_str!("../queries/job_list.sql");
    pub(crate) const QUEUE_STATS: &str = include_str!("../queries/queue_stats.sql");
    pub(crate) const JOB_PRUNE: &str = include_str!("../queries/job_prune.sql");
    pub(crate) const JOB_DEDUP_LIVE: &str = include_str!("../queries/job_dedup_live.sql");
    pub(crate) const JOB_DEDUP_OF: &str = include_str!("../queries/job_dedup_of.sql");
    pub(crate) const SQLITE_VERSION: &str = include_str!("../queries/sqlite_version.sql");
}

/// SQLite's default limit on bound parameters in one statement (`SQLITE_MAX_VARIABLE_NUMBER`
/// since 3.32); multi-row statements are chunked to stay under it.
const MAX_PARAMS: usize = 32_766;
/// Values bound per row of `JobInsert`.
const INSERT_PARAMS: usize = 9;
/// Values bound per lease of `JobSetCompletedManyIfRunning` (plus two for `now`).
const ACK_PARAMS: usize = 2;
/// How often an optimistic pop re-reads candidates when every one it read was taken by another
/// claimer before it could claim them.
const OPTIMISTIC_ROUNDS: usize = 3;

/// A job queue in one SQLite database file. Cheap to clone; clones share the connections.
///
/// Build one with [`SqliteQueue::builder`]; use it through the [`Queue`] trait.
#[derive(Clone)]
pub struct SqliteQueue {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) writer: SqlitePool,
    pub(crate) reader: SqlitePool,
    pub(crate) caps: Capabilities,
    pub(crate) retry: RetryPolicy,
    pub(crate) limits: Limits,
    pub(crate) hub: WakeHub,
    /// The database, redacted, for logs and `Debug`.
    pub(crate) target: String,
}

impl fmt::Debug for SqliteQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteQueue")
            .field("database", &self.inner.target)
            .field("claim", &self.inner.caps.claim)
            .finish_non_exhaustive()
    }
}

impl SqliteQueue {
    /// Starts configuring a queue stored in `url_or_path`: `sqlite://path/to/file.db`,
    /// `sqlite:file.db` or a plain path (relative paths are relative to the working directory).
    /// The file is created when missing.
    pub fn builder(url_or_path: impl Into<String>) -> SqliteQueueBuilder {
        SqliteQueueBuilder::new(url_or_path)
    }

    pub(crate) fn from_inner(inner: Arc<Inner>) -> Self {
        SqliteQueue { inner }
    }

    /// The pool of the one writer connection, for statements of your own against the same
    /// database file (they queue behind the queue's writes).
    pub fn writer_pool(&self) -> &SqlitePool {
        &self.inner.writer
    }

    /// Starts a transaction with `BEGIN IMMEDIATE` on the queue's writer connection, for
    /// [`push_in_tx`](Self::push_in_tx), [`complete_in_tx`](Self::complete_in_tx) and your own
    /// statements on the same file. Commit or roll it back promptly: it holds the only writer
    /// connection, so while it is open every other write of this queue value waits (do not call
    /// the queue's ordinary methods that write, such as `push`, while holding it).
    ///
    /// A transaction of your own on another connection to the same file works too; start it
    /// with `BEGIN IMMEDIATE` so it takes the write lock before it reads.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the write lock or connection is not free in time.
    pub async fn begin(&self) -> Result<Transaction<'static, Sqlite>> {
        self.inner
            .writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db)
    }

    /// Pushes `job` inside the caller's transaction: the job exists iff `tx` commits. Workers
    /// of this process are not woken at the commit; they find the job at their next poll.
    ///
    /// # Errors
    /// As [`Queue::push`].
    pub async fn push_in_tx(&self, tx: &mut Transaction<'_, Sqlite>, job: NewJob) -> Result<JobId> {
        job.validate(&self.inner.limits)?;
        insert_rows(tx, std::slice::from_ref(&job), now_micros()).await?;
        Ok(job.id())
    }

    /// Pushes every job of `jobs` inside the caller's transaction: all exist iff `tx` commits.
    ///
    /// # Errors
    /// As [`Queue::push_batch`]. After an error the rows of earlier chunks may be in `tx`; roll
    /// it back.
    pub async fn push_batch_in_tx(
        &self,
        tx: &mut Transaction<'_, Sqlite>,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<JobId>> {
        validate_batch(&jobs, &self.inner.limits)?;
        if let Some((queue, key)) = duplicate_in_batch(&jobs) {
            return Err(Error::Duplicate {
                queue: queue.to_owned(),
                dedup_key: key.to_owned(),
            });
        }
        let now = now_micros();
        for chunk in jobs.chunks(MAX_PARAMS / INSERT_PARAMS) {
            insert_rows(tx, chunk, now).await?;
        }
        Ok(jobs.iter().map(|j| j.id()).collect())
    }

    /// Marks the leased job completed inside the caller's transaction, so the handler's own
    /// writes and the completion commit together or not at all (exactly-once effects).
    ///
    /// # Errors
    /// [`Error::LeaseLost`] or [`Error::Cancelled`] when the lease is no longer current: nothing
    /// was changed, and the caller should roll back its own writes.
    pub async fn complete_in_tx(
        &self,
        tx: &mut Transaction<'_, Sqlite>,
        lease: &Lease,
    ) -> Result<()> {
        let r = sqlx::query(sql::JOB_ACK)
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(now_micros())
            .execute(&mut **tx)
            .await
            .map_err(db)?;
        if r.rows_affected() == 1 {
            return Ok(());
        }
        Err(match job_state(tx, lease.job_id).await? {
            Some(JobState::Cancelled) => Error::Cancelled { job: lease.job_id },
            _ => Error::LeaseLost { job: lease.job_id },
        })
    }

    /// Closes every connection; later calls fail with [`Error::Unavailable`].
    pub async fn close(&self) {
        self.inner.writer.close().await;
        self.inner.reader.close().await;
    }

    /// Finds out why a fenced transition of `lease` changed nothing.
    async fn lease_error(&self, lease: &Lease) -> Error {
        let state: Option<String> = match sqlx::query_scalar(sql::JOB_STATE)
            .bind(lease.job_id.0)
            .fetch_optional(&self.inner.reader)
            .await
        {
            Ok(s) => s,
            Err(e) => return db(e),
        };
        if state.as_deref() == Some(JobState::Cancelled.as_str()) {
            Error::Cancelled { job: lease.job_id }
        } else {
            Error::LeaseLost { job: lease.job_id }
        }
    }

    /// `Ok` when a fenced transition changed its one row, otherwise the reason it did not.
    async fn fenced(&self, lease: &Lease, rows: u64) -> Result<()> {
        if rows == 1 {
            Ok(())
        } else {
            Err(self.lease_error(lease).await)
        }
    }

    /// The write-lock claim: one `UPDATE ... RETURNING` statement. It runs in autocommit mode,
    /// which for a single writing statement is the same as wrapping it in `BEGIN IMMEDIATE`:
    /// SQLite opens the statement's transaction with write intent, taking the write lock (and
    /// waiting for it under the busy timeout) before it reads anything, and commits when the
    /// statement finishes. Skipping the explicit `BEGIN`/`COMMIT` saves two calls per pop.
    async fn claim_write_lock(
        &self,
        req: &PopRequest,
        now: i64,
        expires: i64,
    ) -> Result<Vec<SqliteRow>> {
        sqlx::query(sql::JOB_CLAIM)
            .bind(&req.queue)
            .bind(now)
            .bind(expires)
            .bind(&req.worker)
            .bind(req.limit as i64)
            .fetch_all(&self.inner.writer)
            .await
            .map_err(db)
    }

    async fn claim_optimistic(
        &self,
        req: &PopRequest,
        now: i64,
        expires: i64,
    ) -> Result<Vec<SqliteRow>> {
        let mut claimed = Vec::new();
        for _ in 0..OPTIMISTIC_ROUNDS {
            let want = req.limit - claimed.len();
            let candidates: Vec<(Uuid, i64)> = sqlx::query_as(sql::JOB_CANDIDATES)
                .bind(&req.queue)
                .bind(now)
                .bind(want as i64)
                .fetch_all(&self.inner.reader)
                .await
                .map_err(db)?;
            if candidates.is_empty() {
                break;
            }
            let mut tx = self
                .inner
                .writer
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(db)?;
            let mut lost = 0;
            for (id, version) in &candidates {
                let row = sqlx::query(sql::JOB_CLAIM_ONE)
                    .bind(id)
                    .bind(version)
                    .bind(Uuid::new_v4())
                    .bind(now)
                    .bind(expires)
                    .bind(&req.worker)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db)?;
                match row {
                    Some(row) => claimed.push(row),
                    None => lost += 1,
                }
            }
            tx.commit().await.map_err(db)?;
            // Stop unless others took some of our candidates and there may be more to claim.
            if lost == 0 || claimed.len() >= req.limit || candidates.len() < want {
                break;
            }
            tracing::trace!(target: LOG_TARGET, queue = %req.queue, lost, "optimistic claim lost candidates; reading again");
        }
        Ok(claimed)
    }

    fn notify_pushed<'a>(&self, queues: impl Iterator<Item = &'a str>) {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for q in queues {
            *counts.entry(q).or_default() += 1;
        }
        for (q, n) in counts {
            self.inner.hub.notify(q, n);
        }
    }
}

/// The host clock in microseconds since the Unix epoch: SQLite's "database clock".
pub(crate) fn now_micros() -> i64 {
    Utc::now().timestamp_micros()
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

fn to_time(us: i64) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp_micros(us)
        .ok_or_else(|| Error::database(format!("timestamp out of range: {us} µs")))
}

fn to_time_opt(us: Option<i64>) -> Result<Option<DateTime<Utc>>> {
    us.map(to_time).transpose()
}

fn to_u32(v: i64, column: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::database(format!("{column} out of range: {v}")))
}

/// A full job row (the columns every job-returning statement selects) as a [`Job`], plus its
/// lease token.
fn job_from_row(row: &SqliteRow) -> Result<(Job, Option<Uuid>)> {
    let payload: String = row.try_get("payload").map_err(db)?;
    let payload = RawValue::from_string(payload)
        .map_err(|e| Error::database(format!("stored payload is not JSON: {e}")))?;
    let state = parse_state(row.try_get("state").map_err(db)?)?;
    let job = Job {
        id: JobId(row.try_get("id").map_err(db)?),
        queue: row.try_get("queue").map_err(db)?,
        payload,
        priority: row.try_get("priority").map_err(db)?,
        state,
        attempts: to_u32(row.try_get("attempts").map_err(db)?, "attempts")?,
        max_attempts: to_u32(row.try_get("max_attempts").map_err(db)?, "max_attempts")?,
        run_at: to_time(row.try_get("run_at").map_err(db)?)?,
        lease_expires_at: to_time_opt(row.try_get("lease_expires_at").map_err(db)?)?,
        worker: row.try_get("worker").map_err(db)?,
        last_error: row.try_get("last_error").map_err(db)?,
        dedup_key: row.try_get("dedup_key").map_err(db)?,
        created_at: to_time(row.try_get("created_at").map_err(db)?)?,
        updated_at: to_time(row.try_get("updated_at").map_err(db)?)?,
        finished_at: to_time_opt(row.try_get("finished_at").map_err(db)?)?,
    };
    let token: Option<Uuid> = row.try_get("lease_token").map_err(db)?;
    Ok((job, token))
}

/// A claimed row as a [`Leased`].
fn leased_from_row(row: &SqliteRow) -> Result<Leased> {
    let (job, token) = job_from_row(row)?;
    let token = token.ok_or_else(|| Error::database("claimed row has no lease token"))?;
    let expires_at = job
        .lease_expires_at
        .ok_or_else(|| Error::database("claimed row has no lease expiry"))?;
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

/// Splits a statement whose last part is `VALUES\n(tuple)[\n)]` into the text before the tuple,
/// the tuple, and what follows it, so the tuple can be repeated for a multi-row statement.
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

/// Inserts `jobs` with one multi-row `INSERT` (the caller keeps them under the parameter limit).
async fn insert_rows(conn: &mut SqliteConnection, jobs: &[NewJob], now: i64) -> Result<()> {
    let now_time = to_time(now)?;
    let statement = if jobs.len() == 1 {
        Cow::Borrowed(sql::JOB_INSERT)
    } else {
        Cow::Owned(repeat_tuple(sql::JOB_INSERT, jobs.len()))
    };
    let mut q = sqlx::query(&statement);
    for job in jobs {
        let run_at = now.saturating_add(micros(job.delay_from(now_time)));
        q = q
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(i64::from(job.max_attempts_value()))
            .bind(run_at)
            .bind(job.dedup_key_value())
            .bind(now)
            .bind(now);
    }
    match q.execute(&mut *conn).await {
        Ok(_) => Ok(()),
        Err(e) if error::is_dedup_violation(&e) => {
            let clash = find_dedup_clash(conn, jobs).await;
            Err(error::map(e, clash))
        }
        Err(e) => Err(db(e)),
    }
}

/// After a rejected insert: the `(queue, dedup_key)` of `jobs` that a live job holds.
async fn find_dedup_clash<'a>(
    conn: &mut SqliteConnection,
    jobs: &'a [NewJob],
) -> Option<(&'a str, &'a str)> {
    for job in jobs {
        if let Some(key) = job.dedup_key_value() {
            let live = sqlx::query(sql::JOB_DEDUP_LIVE)
                .bind(job.queue())
                .bind(key)
                .fetch_optional(&mut *conn)
                .await
                .ok()
                .flatten()
                .is_some();
            if live {
                return Some((job.queue(), key));
            }
        }
    }
    None
}

/// The state of job `id`, `None` when there is no such job.
async fn job_state(conn: &mut SqliteConnection, id: JobId) -> Result<Option<JobState>> {
    let state: Option<String> = sqlx::query_scalar(sql::JOB_STATE)
        .bind(id.0)
        .fetch_optional(conn)
        .await
        .map_err(db)?;
    state.map(|s| parse_state(&s)).transpose()
}

fn parse_state(s: &str) -> Result<JobState> {
    s.parse()
        .map_err(|_| Error::database(format!("unknown job state {s:?}")))
}

/// The first `(queue, dedup_key)` that appears twice among `jobs`.
fn duplicate_in_batch(jobs: &[NewJob]) -> Option<(&str, &str)> {
    let mut seen = HashSet::new();
    jobs.iter()
        .filter_map(|j| j.dedup_key_value().map(|k| (j.queue(), k)))
        .find(|pair| !seen.insert(*pair))
}

#[async_trait]
impl Queue for SqliteQueue {
    fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    async fn migrate(&self) -> Result<()> {
        migrate::run(&self.inner.writer).await
    }

    async fn push(&self, job: NewJob) -> Result<JobId> {
        job.validate(&self.inner.limits)?;
        let now = now_micros();
        let run_at = now.saturating_add(micros(job.delay_from(to_time(now)?)));
        sqlx::query(sql::JOB_INSERT)
            .bind(job.id().0)
            .bind(job.queue())
            .bind(job.payload_json())
            .bind(job.priority_value())
            .bind(i64::from(job.max_attempts_value()))
            .bind(run_at)
            .bind(job.dedup_key_value())
            .bind(now)
            .bind(now)
            .execute(&self.inner.writer)
            .await
            .map_err(|e| error::map(e, job.dedup_key_value().map(|k| (job.queue(), k))))?;
        self.inner.hub.notify(job.queue(), 1);
        Ok(job.id())
    }

    async fn push_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        validate_batch(&jobs, &self.inner.limits)?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        if let Some((queue, key)) = duplicate_in_batch(&jobs) {
            return Err(Error::Duplicate {
                queue: queue.to_owned(),
                dedup_key: key.to_owned(),
            });
        }
        let now = now_micros();
        let rows_per_chunk = MAX_PARAMS / INSERT_PARAMS;
        if jobs.len() <= rows_per_chunk {
            // One statement is atomic by itself.
            let mut conn = self.inner.writer.acquire().await.map_err(db)?;
            insert_rows(&mut conn, &jobs, now).await?;
        } else {
            let mut tx = self
                .inner
                .writer
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(db)?;
            for chunk in jobs.chunks(rows_per_chunk) {
                insert_rows(&mut tx, chunk, now).await?;
            }
            tx.commit().await.map_err(db)?;
        }
        self.notify_pushed(jobs.iter().map(|j| j.queue()));
        Ok(jobs.iter().map(|j| j.id()).collect())
    }

    async fn pop(&self, req: PopRequest) -> Result<Vec<Leased>> {
        req.validate(&self.inner.limits)?;
        let now = now_micros();
        let expires = now.saturating_add(micros(req.lease));
        let rows = match self.inner.caps.claim {
            ClaimStrategy::Optimistic => self.claim_optimistic(&req, now, expires).await?,
            _ => self.claim_write_lock(&req, now, expires).await?,
        };
        let mut leased = rows
            .iter()
            .map(leased_from_row)
            .collect::<Result<Vec<_>>>()?;
        // RETURNING yields rows in no particular order; hand them out in claim order.
        leased.sort_by(|a, b| {
            b.job
                .priority
                .cmp(&a.job.priority)
                .then(a.job.run_at.cmp(&b.job.run_at))
                .then(a.job.id.cmp(&b.job.id))
        });
        Ok(leased)
    }

    async fn ack(&self, lease: &Lease) -> Result<()> {
        let r = sqlx::query(sql::JOB_ACK)
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(now_micros())
            .execute(&self.inner.writer)
            .await
            .map_err(db)?;
        self.fenced(lease, r.rows_affected()).await
    }

    async fn ack_batch(&self, leases: &[Lease]) -> Result<u64> {
        validate_ack_batch(leases, &self.inner.limits)?;
        if leases.is_empty() {
            return Ok(0);
        }
        let now = now_micros();
        let per_chunk = (MAX_PARAMS - 2) / ACK_PARAMS;
        let mut done = 0;
        for chunk in leases.chunks(per_chunk) {
            let statement = repeat_tuple(sql::JOB_ACK_MANY, chunk.len());
            let mut q = sqlx::query(&statement).bind(now).bind(now);
            for lease in chunk {
                q = q.bind(lease.job_id.0).bind(lease.token);
            }
            done += q
                .execute(&self.inner.writer)
                .await
                .map_err(db)?
                .rows_affected();
        }
        Ok(done)
    }

    async fn fail(&self, lease: &Lease, failure: Failure) -> Result<FailOutcome> {
        let now = now_micros();
        let message = truncate_error(&failure.message);
        let (r, outcome) = match self.inner.retry.decide(lease, &failure) {
            FailDecision::Retry(after) => {
                let r = sqlx::query(sql::JOB_FAIL_RETRY)
                    .bind(lease.job_id.0)
                    .bind(lease.token)
                    .bind(now)
                    .bind(now.saturating_add(micros(after)))
                    .bind(message)
                    .execute(&self.inner.writer)
                    .await;
                (r, FailOutcome::Retrying { after })
            }
            FailDecision::Dead => {
                let r = sqlx::query(sql::JOB_FAIL_DEAD)
                    .bind(lease.job_id.0)
                    .bind(lease.token)
                    .bind(now)
                    .bind(message)
                    .execute(&self.inner.writer)
                    .await;
                (r, FailOutcome::Dead)
            }
        };
        self.fenced(lease, r.map_err(db)?.rows_affected()).await?;
        Ok(outcome)
    }

    async fn extend(&self, lease: &Lease, by: Duration) -> Result<Lease> {
        validate::lease("by", by)?;
        let now = now_micros();
        let expires = now.saturating_add(micros(by));
        let r = sqlx::query(sql::JOB_EXTEND)
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(now)
            .bind(expires)
            .execute(&self.inner.writer)
            .await
            .map_err(db)?;
        self.fenced(lease, r.rows_affected()).await?;
        Ok(Lease {
            expires_at: to_time(expires)?,
            ..lease.clone()
        })
    }

    async fn release(&self, lease: &Lease) -> Result<()> {
        let r = sqlx::query(sql::JOB_RELEASE)
            .bind(lease.job_id.0)
            .bind(lease.token)
            .bind(now_micros())
            .execute(&self.inner.writer)
            .await
            .map_err(db)?;
        self.fenced(lease, r.rows_affected()).await
    }

    async fn rescue_expired(&self) -> Result<u64> {
        let r = sqlx::query(sql::JOB_RESCUE)
            .bind(now_micros())
            .execute(&self.inner.writer)
            .await
            .map_err(db)?;
        if r.rows_affected() > 0 {
            tracing::debug!(target: LOG_TARGET, rescued = r.rows_affected(), "rescued expired leases");
        }
        Ok(r.rows_affected())
    }

    async fn cancel(&self, id: JobId) -> Result<()> {
        let mut tx = self
            .inner
            .writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db)?;
        let r = sqlx::query(sql::JOB_CANCEL)
            .bind(id.0)
            .bind(now_micros())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if r.rows_affected() == 0 {
            let state = job_state(&mut tx, id).await?;
            return Err(match state {
                None => Error::NotFound { job: id },
                Some(state) => Error::InvalidState {
                    job: id,
                    state,
                    operation: "cancel",
                },
            });
        }
        tx.commit().await.map_err(db)
    }

    async fn retry(&self, id: JobId) -> Result<()> {
        let mut tx = self
            .inner
            .writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db)?;
        let r = sqlx::query_scalar::<_, String>(sql::JOB_RETRY)
            .bind(id.0)
            .bind(now_micros())
            .fetch_optional(&mut *tx)
            .await;
        let queue = match r {
            Ok(Some(queue)) => queue,
            Ok(None) => {
                let state = job_state(&mut tx, id).await?;
                return Err(match state {
                    None => Error::NotFound { job: id },
                    Some(state) => Error::InvalidState {
                        job: id,
                        state,
                        operation: "retry",
                    },
                });
            }
            Err(e) if error::is_dedup_violation(&e) => {
                let (queue, key): (String, Option<String>) = sqlx::query_as(sql::JOB_DEDUP_OF)
                    .bind(id.0)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db)?;
                return Err(error::map(
                    e,
                    Some((&queue, key.as_deref().unwrap_or_default())),
                ));
            }
            Err(e) => return Err(db(e)),
        };
        tx.commit().await.map_err(db)?;
        self.inner.hub.notify(&queue, 1);
        Ok(())
    }

    async fn get(&self, id: JobId) -> Result<Option<Job>> {
        let row = sqlx::query(sql::JOB_GET)
            .bind(id.0)
            .fetch_optional(&self.inner.reader)
            .await
            .map_err(db)?;
        row.as_ref()
            .map(|r| job_from_row(r).map(|(j, _)| j))
            .transpose()
    }

    async fn list(&self, req: ListRequest) -> Result<Vec<Job>> {
        req.validate()?;
        let rows = sqlx::query(sql::JOB_LIST)
            .bind(req.queue.as_deref())
            .bind(req.state.map(|s| s.as_str()))
            .bind(req.limit as i64)
            .fetch_all(&self.inner.reader)
            .await
            .map_err(db)?;
        rows.iter()
            .map(|r| job_from_row(r).map(|(j, _)| j))
            .collect()
    }

    async fn stats(&self, queue: Option<&str>) -> Result<Vec<QueueStats>> {
        if let Some(q) = queue {
            validate::queue_name(q)?;
        }
        let rows = sqlx::query(sql::QUEUE_STATS)
            .bind(now_micros())
            .bind(queue)
            .fetch_all(&self.inner.reader)
            .await
            .map_err(db)?;
        let count = |row: &SqliteRow, col: &str| -> Result<u64> {
            let v: i64 = row.try_get(col).map_err(db)?;
            Ok(u64::try_from(v).unwrap_or(0))
        };
        let mut out = rows
            .iter()
            .map(|row| {
                Ok(QueueStats {
                    queue: row.try_get("queue").map_err(db)?,
                    available: count(row, "available")?,
                    scheduled: count(row, "scheduled")?,
                    running: count(row, "running")?,
                    completed: count(row, "completed")?,
                    dead: count(row, "dead")?,
                    cancelled: count(row, "cancelled")?,
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
        let cutoff = now_micros().saturating_sub(micros(req.older_than));
        let mut states: Vec<&str> = Vec::with_capacity(3);
        for s in &req.states {
            if !states.contains(&s.as_str()) {
                states.push(s.as_str());
            }
        }
        // The statement takes three states; repeat the first to fill the unused slots.
        let state = |i: usize| states.get(i).copied().unwrap_or(states[0]);
        let r = sqlx::query(sql::JOB_PRUNE)
            .bind(cutoff)
            .bind(req.queue.as_deref())
            .bind(state(0))
            .bind(state(1))
            .bind(state(2))
            .execute(&self.inner.writer)
            .await
            .map_err(db)?;
        Ok(r.rows_affected())
    }

    async fn wait_for_work(&self, queue: &str, timeout: Duration) {
        self.inner.hub.wait(queue, timeout).await;
    }

    async fn now(&self) -> Result<DateTime<Utc>> {
        to_time(now_micros())
    }
}
