//! [`PgDriver`]: the PostgreSQL statements behind the engine.

use std::time::Duration;

use queue_core::engine::{micros, JobClaim, JobComplete, JobInsert};
use queue_core::EngineProfile;
use sqlx::postgres::PgConnection;
use sqlx::{PgPool, Postgres, Row};

use crate::copy::copy_rows;
use crate::listen::Listener;
use crate::nodes::Nodes;
use crate::pinned::on_pool;
use crate::sql::Statements;

use rows::{count, limit, signed};

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
    /// The interval of finished partitions a migration turns on (`None`: a migration leaves
    /// the layout as it is).
    pub(crate) partitions: Option<Duration>,
    /// Whether the database keeps finished jobs in partitions, as last read.
    pub(crate) layout: Layout,
}

/// How long the driver trusts what it read of the layout: a process learns within this that
/// another one's migration turned finished partitions on.
const LAYOUT_FRESH: Duration = Duration::from_secs(60);

/// Whether finished jobs move to `jobs_done` (finished partitions are on), read from the
/// database on first use and again once [`LAYOUT_FRESH`] has passed. Until it is known, and
/// when it cannot be read (a schema not yet migrated), jobs finish in place: correct in either
/// layout, since every read of finished jobs reads both tables and retention prunes both.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    read: std::sync::Mutex<Option<(bool, std::time::Instant)>>,
}

impl Layout {
    fn known(&self) -> Option<bool> {
        let read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        read.filter(|(_, at)| at.elapsed() < LAYOUT_FRESH)
            .map(|(moves, _)| moves)
    }

    fn set(&self, moves: bool) {
        *self.read.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((moves, std::time::Instant::now()));
    }

    /// Forgets what was read: after a migration, which may have changed it.
    pub(crate) fn forget(&self) {
        *self.read.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl PgDriver {
    /// Whether finished jobs move to `jobs_done` (see [`Layout`]).
    async fn moves(&self) -> bool {
        if let Some(moves) = self.layout.known() {
            return moves;
        }
        let read: Result<Option<i64>, sqlx::Error> = on_pool!(self, |e| sqlx::query_scalar(
            self.sql.finished_partitions.clone()
        )
        .persistent(self.named())
        .fetch_optional(e));
        // An error (a schema not migrated yet, a pool that had no connection) reads as off
        // until the next read: finishing in place is correct in either layout.
        let moves = matches!(read, Ok(Some(_)));
        self.layout.set(moves);
        moves
    }

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
        named: bool,
    ) -> sqlx::query::Query<'_, Postgres, sqlx::postgres::PgArguments> {
        let sql = match p.after {
            None => self.sql.job_claim.clone(),
            Some(_) => self.sql.job_claim_after.clone(),
        };
        let q = sqlx::query(sql)
            .persistent(named)
            .bind(p.queue)
            .bind(limit(p.limit))
            .bind(micros(p.lease))
            .bind(p.worker)
            .bind(p.controls_checked);
        match p.after {
            None => q,
            Some(a) => q.bind(a.priority).bind(a.run_at).bind(a.id.0),
        }
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

    /// `moves`: [`PgDriver::moves`], read before the connection was taken (reading it may take
    /// another one).
    async fn complete_on(
        &self,
        conn: &mut PgConnection,
        p: JobComplete<'_>,
        moves: bool,
    ) -> Result<u64, sqlx::Error> {
        let sql = if moves {
            &self.sql.job_complete_move
        } else {
            &self.sql.job_complete
        };
        let done = sqlx::query(sql.clone())
            .persistent(self.named())
            .bind(p.lease.job_id.0)
            .bind(p.lease.token)
            .bind(p.output)
            .bind(!p.completion.deletes())
            .fetch_one(conn)
            .await?;
        Ok(count(done.try_get("completed")?))
    }
}
