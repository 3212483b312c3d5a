//! [`MySqlDriver`]: the MySQL and MariaDB statements behind the engine.

use chrono::{DateTime, Utc};
use queue_core::engine::{micros, Completion, JobClaim, JobInsert};
use queue_core::workflow::WorkflowId;
use queue_core::{Job, JobId, JobState, Lease, Leased, NewJob};
use sqlx::mysql::{MySqlConnection, MySqlPool, MySqlRow};
use sqlx::{MySql, Row};
use uuid::Uuid;

use crate::migrate::LockRowSql;
use crate::server::ServerInfo;
use crate::sql::Statements;

use rows::{
    check_locked, decode, json_column, lease_expiry, opt_text, opt_uuid, payload, sorted_ids, text,
    timeout,
};

mod claim;
mod controls;
mod lifecycle;
mod maintenance;
mod operators;
mod push;
pub(crate) mod rows;
mod running;
mod schedules;
mod workflows;

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

/// Queues counted per `job_stats` statement (twelve values bound per queue).
const STATS_QUEUES: usize = 100;

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
        let Some(after) = p.after else {
            let rows = sqlx::query(self.sql.job_claim.clone())
                .bind(p.queue)
                .bind(p.controls_checked)
                .bind(p.queue)
                .bind(p.limit as u64)
                .fetch_all(&mut *conn)
                .await?;
            return self.lease_locked(conn, &rows, p).await;
        };
        // From a position: the jobs of a higher priority first (looked for downwards, and
        // claimed from the head only when there are any), then those after it.
        let claim_priority = -i64::from(after.priority);
        let ahead = sqlx::query(self.sql.job_claim_ahead_any.clone())
            .bind(p.queue)
            .bind(claim_priority)
            .fetch_optional(&mut *conn)
            .await?;
        let mut rows = match ahead {
            None => Vec::new(),
            Some(_) => {
                sqlx::query(self.sql.job_claim_ahead.clone())
                    .bind(p.queue)
                    .bind(claim_priority)
                    .bind(p.controls_checked)
                    .bind(p.queue)
                    .bind(p.limit as u64)
                    .fetch_all(&mut *conn)
                    .await?
            }
        };
        if rows.len() < p.limit {
            let more = sqlx::query(self.sql.job_claim_after.clone())
                .bind(p.queue)
                .bind(claim_priority)
                .bind(after.run_at)
                .bind(after.id.0)
                .bind(claim_priority)
                .bind(after.run_at)
                .bind(claim_priority)
                .bind(p.controls_checked)
                .bind(p.queue)
                .bind((p.limit - rows.len()) as u64)
                .fetch_all(&mut *conn)
                .await?;
            rows.extend(more);
        }
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
        let expires_at = lease_expiry(now, p.lease)?;
        let tokens = Lease::new_tokens(candidates.len());
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

    /// `job_complete_many` on `conn`, in statements of at most [`PAIR_CHUNK`] leases; with
    /// [`Completion::Delete`], `job_complete_many_delete` first (the caller holds a transaction).
    async fn complete_on(
        &self,
        conn: &mut MySqlConnection,
        leases: &[Lease],
        completion: Completion,
    ) -> Result<u64, sqlx::Error> {
        let mut total = 0;
        for chunk in leases.chunks(PAIR_CHUNK) {
            for delete in [true, false] {
                if delete && !completion.deletes() {
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
