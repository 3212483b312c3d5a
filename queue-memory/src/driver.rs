//! [`MemoryDriver`]: every statement of the catalogue, written as plain Rust over the store's
//! tables. This is the reference for a new dialect: each method does exactly what the
//! statement of the same name in a SQL dialect's `queries/` directory does, and its doc says
//! it in words.
//!
//! How the SQL dialects' guarantees are kept here:
//!
//! - **One lock.** Every statement holds the store's lock while it runs, so it is atomic and
//!   sees every statement that finished before it (as SQLite's write lock; no dirty reads, no
//!   lost updates, no lock conflicts). A transaction of the driver's ([`MemoryTx`]) holds the
//!   lock from `tx_begin` to its end, so nothing interleaves with it.
//! - **All or nothing.** A statement that fails (a unique index refused a row) undoes the
//!   writes it made; a transaction that rolls back undoes every statement's.
//! - **The database's clock.** Each statement reads the store's clock once, after taking the
//!   lock, and uses that reading for everything it writes (`now`): `run_at` from a delay,
//!   `updated_at`, `finished_at`, lease expiries, rate windows. A claim that waited for the
//!   lock therefore never hands out a lease that is partly spent.
//! - **Fences.** A transition a holder makes matches `id`, `lease_token` and state running;
//!   a row that no longer matches is left alone and counts as no row changed.
//! - **Indexes.** A pending job is claimed from an ordered index of its queue (priority
//!   descending, then `run_at`, then id), so a claim reads what it takes; operators' reads
//!   (`job_list`, `job_ids`, `job_count`) walk the jobs newest first, as the SQL reads the
//!   primary key.
//! - **Faults.** Every statement begins with `enter`, where the faults a test injected through
//!   [`Faults`](crate::Faults) strike (latency, an outage, errors, panics); a queue value without
//!   them pays one atomic load.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, SubsecRound, Utc};
use queue_core::engine::{
    micros, Driver, DriverFault, Expired, JobClaim, JobComplete, JobFailDead, JobFailRetry,
    JobInsert, JobInsertUnique, JobMatch, JobMetaSet, JobPrune, JobReschedule, JobRescue,
    JobSnooze, JobUniqueReplace, Migration, RateState, ScheduleAdvance, StoredMeta, StoredSchedule,
    StoredWorkflow, Target, UniqueInsert, WorkflowEdge, WorkflowInsert, WorkflowPrune,
    WorkflowPruneLock, WorkflowPruned,
};
use queue_core::{
    AttemptError, DepPolicy, Dependency, Job, JobId, JobState, Lease, Leased, ListRequest, NewJob,
    QueueControl, QueueStats, WakeHub, WorkflowId,
};
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::error::MemoryError;
use crate::faults::{Call, Faults, Statement};
use crate::jobs::{ClaimOrder, JobRow};
use crate::migrate::MIGRATIONS;
use crate::store::{driver_id, statement, MemorySavepoint, MemoryTx, Store};
use crate::tables::{MaintenanceRow, QueueRow, RateCount, Tables, Writer};

/// The maintenance tasks whose lease rows the first migration creates, due at once (as every
/// dialect's migrations do): retention, and the queue gauge sampler.
const MAINTENANCE_TASKS: [&str; 2] = ["retention", "gauges"];

type Result<T> = std::result::Result<T, MemoryError>;

/// The in-memory driver behind [`crate::MemoryQueue`]: the store it works on (shared with the
/// other queue values on a named store). Reached through [`queue_core::Backend::engine`].
#[derive(Debug)]
pub struct MemoryDriver {
    store: Arc<Store>,
    /// Tells this queue value's waiting workers apart from other queue values' on the store.
    id: u64,
    /// The faults injected into this queue value's statements, once a test asked for them.
    faults: OnceLock<Faults>,
}

impl Drop for MemoryDriver {
    fn drop(&mut self) {
        self.store.forget(self.id);
    }
}

/// `now` plus `d`, at microsecond precision (how every dialect binds durations).
fn after(now: DateTime<Utc>, d: Duration, what: &'static str) -> Result<DateTime<Utc>> {
    now.checked_add_signed(chrono::Duration::microseconds(micros(d)))
        .ok_or(MemoryError::TimeOutOfRange(what))
}

/// `now` less `d`; the earliest time there is when that is before it (nothing is older).
fn before(now: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    now.checked_sub_signed(chrono::Duration::microseconds(micros(d)))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// JSON text as stored: checked once, when it is written.
fn json(text: &str, column: &'static str) -> Result<Box<RawValue>> {
    RawValue::from_string(text.to_owned()).map_err(|source| MemoryError::NotJson { column, source })
}

/// A duration as stored: whole microseconds.
fn stored_duration(d: Duration) -> Duration {
    Duration::from_micros(u64::try_from(micros(d)).unwrap_or(u64::MAX))
}

/// A new pending job's row: due at `run_at`, created `now`.
fn new_row(
    job: &NewJob,
    run_at: DateTime<Utc>,
    now: DateTime<Utc>,
    unique: Option<([u8; 32], i16)>,
) -> Result<JobRow> {
    Ok(JobRow {
        id: job.id(),
        queue: job.queue().to_owned(),
        payload: json(job.payload_json(), "payload")?,
        priority: job.priority_value(),
        state: job.initial_state(),
        attempts: 0,
        max_attempts: job.max_attempts_value(),
        run_at,
        lease_token: None,
        lease_expires_at: None,
        worker: None,
        last_error: None,
        dedup_key: job.dedup_key_value().map(str::to_owned),
        version: 0,
        created_at: now,
        updated_at: now,
        finished_at: None,
        kind: job.kind_value().map(str::to_owned),
        meta: job.meta_json().map(|m| json(m, "meta")).transpose()?,
        timeout: job.timeout_value().map(stored_duration),
        snoozes: 0,
        errors: Vec::new(),
        output: None,
        unique,
        concurrency_key: job.concurrency_key_value().map(str::to_owned),
        workflow: job.workflow_id(),
        blocked_by: None,
    })
}

/// The states a job can be cancelled in.
const LIVE: [JobState; 3] = [JobState::Waiting, JobState::Pending, JobState::Running];

/// The running job held by `lease`, copied for changing; `None` when the lease is not current
/// (the fence of every transition a holder makes).
fn fenced(w: &Writer<'_>, lease: &Lease) -> Result<Option<JobRow>> {
    Ok(w.schema()?
        .jobs
        .get(lease.job_id)
        .filter(|row| row.leased_by(lease))
        .cloned())
}

/// The row `id`, copied for changing, when its state is one of `states`.
fn in_state(w: &Writer<'_>, id: JobId, states: &[JobState]) -> Result<Option<JobRow>> {
    Ok(w.schema()?
        .jobs
        .get(id)
        .filter(|row| states.contains(&row.state))
        .cloned())
}

/// Rewrites with `change` each of `ids` whose state is one of `states`; rows changed.
fn update_each(
    w: &mut Writer<'_>,
    ids: &[JobId],
    states: &[JobState],
    change: impl Fn(JobRow) -> JobRow,
) -> Result<u64> {
    let mut done = 0;
    for id in ids {
        if let Some(row) = in_state(w, *id, states)? {
            w.update_job(change(row))?;
            done += 1;
        }
    }
    Ok(done)
}

/// A row that leaves `running` for `pending` or a finished state: no lease any more.
fn end_lease(row: &mut JobRow) {
    row.lease_token = None;
    row.lease_expires_at = None;
}

/// A new version of a row, written at `now`.
fn touch(row: &mut JobRow, now: DateTime<Utc>) {
    row.version += 1;
    row.updated_at = now;
}

/// Records a failure of the row's current attempt: `last_error`, and an entry
/// `{attempt, at, error, worker}` at the end of the history, of which the newest `kept`
/// remain. Reads the row as it is before the transition, so the entry names the attempt and
/// the worker that failed.
fn record_failure(row: &mut JobRow, error: &str, at: DateTime<Utc>, kept: u32) {
    row.last_error = Some(error.to_owned());
    row.errors.push(AttemptError {
        attempt: row.attempts,
        at,
        error: error.to_owned(),
        worker: row.worker.clone(),
    });
    let excess = row
        .errors
        .len()
        .saturating_sub(usize::try_from(kept).unwrap_or(usize::MAX));
    row.errors.drain(..excess);
}

/// A dead or cancelled job back to pending, due now, attempts and snoozes reset, its history
/// kept.
fn retried(mut row: JobRow, now: DateTime<Utc>) -> JobRow {
    // A step of a workflow waits: the engine settles it in the same transaction.
    row.state = if row.workflow.is_some() {
        JobState::Waiting
    } else {
        JobState::Pending
    };
    row.attempts = 0;
    row.snoozes = 0;
    row.blocked_by = None;
    row.run_at = now;
    row.finished_at = None;
    row.worker = None;
    end_lease(&mut row);
    touch(&mut row, now);
    row
}

/// A pending or running job cancelled: finished now; the lease token is kept, so that its
/// holder's next transition finds the job cancelled under its own token.
fn cancelled(mut row: JobRow, now: DateTime<Utc>) -> JobRow {
    row.state = JobState::Cancelled;
    row.finished_at = Some(now);
    row.lease_expires_at = None;
    touch(&mut row, now);
    row
}

/// Whether an ordinary claim gives out nothing of `queue` (its row says paused or limited).
fn restricted(w: &Writer<'_>, queue: &str) -> Result<bool> {
    Ok(w.schema()?
        .queues
        .get(queue)
        .is_some_and(QueueRow::restricts))
}

/// Which pending jobs of a queue a claim takes from.
#[derive(Clone, Copy)]
enum Among<'a> {
    /// All of them.
    All,
    /// Those with this concurrency key.
    Key(&'a str),
    /// Those without a key.
    Unkeyed,
}

/// Up to `limit` due pending jobs of `queue` in claim order, among `among`.
fn due(
    tables: &Tables,
    queue: &str,
    among: Among<'_>,
    now: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<JobId>> {
    let Some(q) = tables.schema()?.jobs.queue(queue) else {
        return Ok(Vec::new());
    };
    let order: Option<&ClaimOrder> = match among {
        Among::All => Some(&q.pending),
        Among::Key(key) => q.keyed.get(key),
        Among::Unkeyed => Some(&q.unkeyed),
    };
    Ok(order
        .map(|o| o.due(now).take(limit).collect())
        .unwrap_or_default())
}

/// Claims the pending jobs `ids` for `p`: each becomes running under a new lease token, with
/// its attempt counted and a lease of `p.lease` from `now`; returns them as claimed.
fn claim_rows(
    w: &mut Writer<'_>,
    ids: Vec<JobId>,
    p: JobClaim<'_>,
    now: DateTime<Utc>,
) -> Result<Vec<Leased>> {
    let expires = after(now, p.lease, "the lease's expiry")?;
    let mut claimed = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(mut row) = in_state(w, id, &[JobState::Pending])? else {
            continue;
        };
        row.state = JobState::Running;
        row.attempts = row.attempts.saturating_add(1);
        row.lease_token = Some(Uuid::new_v4());
        row.lease_expires_at = Some(expires);
        row.worker = Some(p.worker.to_owned());
        touch(&mut row, now);
        claimed.extend(w.update_job(row)?.leased());
    }
    Ok(claimed)
}

/// `job_claim`: up to `p.limit` due pending jobs of `p.queue` in claim order; none while the
/// queue's row restricts it, unless `p.controls_checked`.
fn claim(w: &mut Writer<'_>, p: JobClaim<'_>, now: DateTime<Utc>) -> Result<Vec<Leased>> {
    if !p.controls_checked && restricted(w, p.queue)? {
        return Ok(Vec::new());
    }
    let ids = due(w.tables(), p.queue, Among::All, now, p.limit)?;
    claim_rows(w, ids, p, now)
}

/// `job_complete_many`: completes every listed job still running under the listed token;
/// unless `keep`, deletes the ones nothing needs instead (see [`deletable`]).
fn complete_many(
    w: &mut Writer<'_>,
    leases: &[Lease],
    keep: bool,
    now: DateTime<Utc>,
) -> Result<u64> {
    let mut done = 0;
    for lease in leases {
        let Some(row) = fenced(w, lease)? else {
            continue;
        };
        complete_row(w, row, None, keep, now)?;
        done += 1;
    }
    Ok(done)
}

/// Whether a completion that does not keep completed jobs deletes `row`, completed with
/// `output`: not when the row is needed (output, a step of a workflow, a uniqueness over the
/// completed state, bit 4).
fn deletable(row: &JobRow, output: Option<&str>) -> bool {
    output.is_none()
        && row.output.is_none()
        && row.workflow.is_none()
        && row.unique.is_none_or(|(_, states)| states & 4 == 0)
}

/// Completes the fenced `row` (its output stored when given), or deletes it (unless `keep`,
/// when nothing needs it).
fn complete_row(
    w: &mut Writer<'_>,
    mut row: JobRow,
    output: Option<&str>,
    keep: bool,
    now: DateTime<Utc>,
) -> Result<()> {
    if !keep && deletable(&row, output) {
        w.delete_job(row.id)?;
        return Ok(());
    }
    row.state = JobState::Completed;
    row.finished_at = Some(now);
    if let Some(o) = output {
        row.output = Some(json(o, "output")?);
    }
    end_lease(&mut row);
    touch(&mut row, now);
    w.update_job(row)?;
    Ok(())
}

/// Jobs that `m` matches, newest first (below `below`): its queue, states, kind, and age by
/// `now`.
fn matching<'t>(
    tables: &'t Tables,
    m: JobMatch<'t>,
    now: DateTime<Utc>,
    below: Option<JobId>,
) -> Result<impl Iterator<Item = &'t JobRow> + 't> {
    Ok(tables
        .schema()?
        .jobs
        .newest_first(below)
        .filter(move |row| matches(m, row, now)))
}

/// Whether `m` (all but its cursor and limit) matches `row`.
fn matches(m: JobMatch<'_>, row: &JobRow, now: DateTime<Utc>) -> bool {
    let created_before = m.older_than.map(|age| before(now, age));
    m.queue.is_none_or(|q| row.queue == q)
        && m.states.contains(&row.state)
        && m.kind.is_none_or(|k| row.kind.as_deref() == Some(k))
        && created_before.is_none_or(|t| row.created_at < t)
}

/// A schedule as read, with the state of its last slot's job (`None`: none, or pruned).
fn schedule_read(tables: &Tables, s: &StoredSchedule) -> Result<StoredSchedule> {
    let jobs = &tables.schema()?.jobs;
    Ok(StoredSchedule {
        last_job_state: s.last_job.and_then(|id| jobs.get(id)).map(|j| j.state),
        ..s.clone()
    })
}

/// A schedule as written: times at microsecond precision, nothing read-only.
fn schedule_stored(s: &StoredSchedule) -> StoredSchedule {
    StoredSchedule {
        since: s.since.trunc_subsecs(6),
        last_slot: s.last_slot.map(|t| t.trunc_subsecs(6)),
        expires_at: s.expires_at.map(|t| t.trunc_subsecs(6)),
        created_at: s.created_at.trunc_subsecs(6),
        updated_at: s.updated_at.trunc_subsecs(6),
        last_job_state: None,
        ..s.clone()
    }
}

/// Changes `queue`'s row of controls (made when missing) with `change`, at `now`.
fn set_control(
    w: &mut Writer<'_>,
    queue: &str,
    now: DateTime<Utc>,
    change: impl FnOnce(&mut QueueRow),
) -> Result<()> {
    let mut row = w.schema()?.queues.get(queue).cloned().unwrap_or_default();
    change(&mut row);
    row.updated_at = Some(now);
    w.put_queue(queue, row)
}

/// Changes `queue`'s existing row with `change` (no row: nothing, as an `UPDATE`).
fn update_control(
    w: &mut Writer<'_>,
    queue: &str,
    change: impl FnOnce(&mut QueueRow),
) -> Result<()> {
    let Some(mut row) = w.schema()?.queues.get(queue).cloned() else {
        return Ok(());
    };
    change(&mut row);
    w.put_queue(queue, row)
}

impl MemoryDriver {
    pub(crate) fn new(store: Arc<Store>) -> Self {
        MemoryDriver {
            store,
            id: driver_id(),
            faults: OnceLock::new(),
        }
    }

    /// The faults of this queue value's statements, made at the first call.
    pub(crate) fn faults(&self) -> Faults {
        self.faults.get_or_init(Faults::default).clone()
    }

    /// A statement begins: without faults, nothing more than one atomic load; with them,
    /// counted, delayed and perhaps struck (see [`Faults`]). Kept until the statement returns.
    async fn enter(&self, statement: Statement) -> Result<Option<Call<'_>>> {
        match self.faults.get() {
            None => Ok(None),
            Some(faults) => faults.enter(statement).await.map(Some),
        }
    }

    /// The store's name, `None` for a private store.
    pub fn store_name(&self) -> Option<&str> {
        self.store.name()
    }

    /// Everything in the store, as text, and whether every index holds what the rows say (for
    /// tests).
    #[cfg(test)]
    pub(crate) async fn inspect(&self) -> (String, std::result::Result<(), String>) {
        let tables = self.store.lock().await;
        let check = match tables.schema() {
            Ok(schema) => schema.jobs.check(),
            Err(_) => Ok(()),
        };
        (tables.dump(), check)
    }

    /// Runs a statement on the pool: it holds the store's lock for itself alone, and reads the
    /// clock once it has it.
    async fn pool<T>(
        &self,
        f: impl FnOnce(&mut Writer<'_>, DateTime<Utc>) -> Result<T> + Send,
    ) -> Result<T> {
        let mut tables = self.store.lock().await;
        let now = self.store.now();
        statement(&mut tables, |w| f(w, now)).map(|(value, _)| value)
    }

    /// Runs a statement where `target` says: on the pool, or inside a transaction.
    async fn on<T>(
        &self,
        target: Target<'_, MemoryTx>,
        f: impl FnOnce(&mut Writer<'_>, DateTime<Utc>) -> Result<T> + Send,
    ) -> Result<T> {
        match target {
            Target::Pool => self.pool(f).await,
            Target::Tx(tx) => {
                let now = self.store.now();
                tx.statement(|w| f(w, now))
            }
        }
    }

    /// Runs a read on the pool.
    async fn read<T>(
        &self,
        f: impl FnOnce(&Tables, DateTime<Utc>) -> Result<T> + Send,
    ) -> Result<T> {
        let tables = self.store.lock().await;
        f(&tables, self.store.now())
    }

    /// Runs a read where `target` says.
    async fn read_on<T>(
        &self,
        target: Target<'_, MemoryTx>,
        f: impl FnOnce(&Tables, DateTime<Utc>) -> Result<T> + Send,
    ) -> Result<T> {
        match target {
            Target::Pool => self.read(f).await,
            Target::Tx(tx) => f(tx.tables(), self.store.now()),
        }
    }

    /// Wakes the other queue values waiting on `queues`, for the jobs of `jobs` in each (at
    /// least one).
    fn wake_others(&self, queues: &[(String, usize)]) {
        for (queue, n) in queues {
            self.store.notify(self.id, queue, *n);
        }
    }
}

/// The wake-ups an insert of `p` sends: each queue of `p.notify`, for its jobs of `p.jobs`.
fn insert_wakeups(p: &JobInsert<'_>) -> Vec<(String, usize)> {
    p.notify
        .iter()
        .map(|q| {
            let n = p.jobs.iter().filter(|j| j.queue() == *q).count();
            ((*q).to_owned(), n.max(1))
        })
        .collect()
}

#[async_trait]
impl Driver for MemoryDriver {
    type Conn = MemoryTx;
    type Error = MemoryError;
    type Candidate = (JobId, i64);
    type Migrator = MemoryTx;

    fn classify(&self, error: &MemoryError) -> DriverFault {
        crate::error::classify(error)
    }

    fn migrations(&self) -> &'static [Migration] {
        MIGRATIONS
    }

    /// Takes the store's lock for the whole migration (a second migration waits, then finds
    /// the versions the first recorded). The bookkeeping of applied migrations always exists.
    async fn migration_lock(&self) -> Result<MemoryTx> {
        let _call = self.enter(Statement::MigrationLock).await?;
        Ok(self.store.begin().await)
    }

    /// The versions recorded so far, ascending.
    async fn migration_applied(&self, m: &mut MemoryTx) -> Result<Vec<i64>> {
        let _call = self.enter(Statement::MigrationApplied).await?;
        Ok(m.tables().migrations.iter().copied().collect())
    }

    /// Applies the migration its version names, and records it. Version 1 creates the tables
    /// (empty) and the maintenance tasks' lease rows, due at once. (A store never outlives its
    /// process, so it never meets a newer release's schema: one migration is all it needs.)
    async fn migration_apply(&self, m: &mut MemoryTx, migration: &Migration) -> Result<()> {
        let _call = self.enter(Statement::MigrationApply).await?;
        m.statement(|w| {
            match migration.version {
                1 => {
                    w.create_schema();
                    for task in MAINTENANCE_TASKS {
                        w.put_maintenance(
                            task,
                            MaintenanceRow {
                                next_at: DateTime::<Utc>::UNIX_EPOCH,
                                token: None,
                            },
                        )?;
                    }
                }
                other => return Err(MemoryError::UnknownMigration(other)),
            }
            w.record_migration(migration.version);
            Ok(())
        })
    }

    /// Ends the migration: keeps its changes when `commit`, else undoes every one.
    async fn migration_unlock(&self, m: MemoryTx, commit: bool) -> Result<()> {
        let _call = self.enter(Statement::MigrationUnlock).await?;
        if commit {
            m.commit();
        } else {
            m.rollback();
        }
        Ok(())
    }

    /// The store's clock (the system's, or the builder's manual clock), in whole microseconds.
    async fn now(&self) -> Result<DateTime<Utc>> {
        let _call = self.enter(Statement::Now).await?;
        Ok(self.store.now())
    }

    /// The store's clock too: the instants a caller gives (a job's `run_at`, a unique job's
    /// period) are measured against the clock its delays are added to, so that on a manual
    /// clock a job pushed to run at an instant runs at that instant of that clock.
    fn host_now(&self) -> DateTime<Utc> {
        self.store.now()
    }

    /// Stores every job of `p` (pending, attempt 0, version 0, due `now` plus its delay, created
    /// and updated `now`), or none: an id that exists, or a dedup key that a live job of the
    /// queue holds (in the store or earlier in the same call), refuses the whole call. Wakes the
    /// queue values waiting on `p.notify` once the jobs are visible (inside a transaction: when
    /// it commits).
    async fn job_insert(&self, target: Target<'_, MemoryTx>, p: JobInsert<'_>) -> Result<()> {
        let _call = self.enter(Statement::JobInsert).await?;
        let insert = |w: &mut Writer<'_>, now: DateTime<Utc>| {
            for (job, delay) in p.jobs.iter().zip(p.delays) {
                let run_at = after(now, *delay, "a job's run time")?;
                w.insert_job(new_row(job, run_at, now, None)?)?;
            }
            Ok(())
        };
        let wakeups = insert_wakeups(&p);
        match target {
            Target::Pool => {
                self.pool(insert).await?;
                self.wake_others(&wakeups);
            }
            Target::Tx(tx) => {
                let now = self.store.now();
                tx.statement(|w| insert(w, now))?;
                for (queue, n) in &wakeups {
                    tx.notify_on_commit(queue, *n);
                }
            }
        }
        Ok(())
    }

    /// Stores one job with a unique key, unless a job whose state is in its own unique states
    /// holds the key: then nothing is stored and that job is the answer. The look-up and the
    /// insert run under one lock, so the key is never found held and then released
    /// ([`UniqueInsert::Released`] does not happen here).
    async fn job_insert_unique(
        &self,
        target: Target<'_, MemoryTx>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert> {
        let _call = self.enter(Statement::JobInsertUnique).await?;
        self.on(target, |w, now| {
            if let Some(holder) = w.schema()?.jobs.unique_holder(p.key) {
                return Ok(UniqueInsert::Held(holder));
            }
            let run_at = after(now, p.delay, "a job's run time")?;
            w.insert_job(new_row(p.job, run_at, now, Some((*p.key, p.states)))?)?;
            Ok(UniqueInsert::Inserted)
        })
        .await
    }

    /// The pending job `p.id` takes the new job's payload and priority, and is due `now` plus
    /// `p.delay`; rows changed (0 when it is no longer pending).
    async fn job_unique_replace(
        &self,
        target: Target<'_, MemoryTx>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64> {
        let _call = self.enter(Statement::JobUniqueReplace).await?;
        self.on(target, |w, now| {
            let Some(mut row) = in_state(w, p.id, &[JobState::Pending])? else {
                return Ok(0);
            };
            row.payload = json(p.job.payload_json(), "payload")?;
            row.priority = p.job.priority_value();
            row.run_at = after(now, p.delay, "a job's run time")?;
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// Another job with the unique key of job `id` that holds it (its state is in its own
    /// unique states).
    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>> {
        let _call = self.enter(Statement::JobUniqueHolder).await?;
        self.read(|t, _| {
            let jobs = &t.schema()?.jobs;
            Ok(jobs
                .get(id)
                .and_then(|row| row.unique.as_ref())
                .and_then(|(key, _)| jobs.unique_holder(key))
                .filter(|holder| *holder != id))
        })
        .await
    }

    /// The `(queue, dedup key)` pairs of live jobs among `queues` and `keys`: one look-up of
    /// the dedup index per pair.
    async fn job_dedup_live(
        &self,
        target: Target<'_, MemoryTx>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>> {
        let _call = self.enter(Statement::JobDedupLive).await?;
        self.read_on(target, |t, _| {
            let jobs = &t.schema()?.jobs;
            let mut live = Vec::new();
            for queue in queues {
                for key in keys {
                    if jobs.dedup_holder(queue, key).is_some() {
                        live.push(((*queue).to_owned(), (*key).to_owned()));
                    }
                }
            }
            Ok(live)
        })
        .await
    }

    /// Claims up to `p.limit` due pending jobs of `p.queue` in claim order (priority
    /// descending, then `run_at`, then id), each under a new lease token and a lease of
    /// `p.lease` from `now`, its attempt counted and `p.worker` stored; none while the queue's
    /// row says paused or limited, unless `p.controls_checked`.
    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>> {
        let _call = self.enter(Statement::JobClaim).await?;
        self.pool(|w, now| claim(w, p, now)).await
    }

    /// `job_claim` inside the engine's controlled claim's transaction.
    async fn job_claim_in(&self, conn: &mut MemoryTx, p: JobClaim<'_>) -> Result<Vec<Leased>> {
        let _call = self.enter(Statement::JobClaimIn).await?;
        self.on(Target::Tx(conn), |w, now| claim(w, p, now)).await
    }

    /// The optimistic claim's read: the id and version of up to `p.limit` due pending jobs of
    /// `p.queue`, in claim order.
    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<(JobId, i64)>> {
        let _call = self.enter(Statement::JobCandidates).await?;
        self.read(|t, now| {
            let jobs = &t.schema()?.jobs;
            let ids = due(t, p.queue, Among::All, now, p.limit)?;
            Ok(ids
                .into_iter()
                .filter_map(|id| jobs.get(id).map(|row| (id, row.version)))
                .collect())
        })
        .await
    }

    /// The optimistic claim's write: claims each candidate that is still pending with the
    /// version that was read (as `job_claim` would); nothing while the queue's row says paused
    /// or limited. Returns the ones won.
    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        candidates: Vec<(JobId, i64)>,
    ) -> Result<Vec<Leased>> {
        let _call = self.enter(Statement::JobClaimCandidates).await?;
        self.pool(|w, now| {
            if restricted(w, p.queue)? {
                return Ok(Vec::new());
            }
            let jobs = &w.schema()?.jobs;
            let unchanged: Vec<JobId> = candidates
                .into_iter()
                .filter(|(id, version)| {
                    jobs.get(*id).is_some_and(|row| {
                        row.state == JobState::Pending && row.version == *version
                    })
                })
                .map(|(id, _)| id)
                .collect();
            claim_rows(w, unchanged, p, now)
        })
        .await
    }

    /// Completes the job if `p.lease` is current: completed and finished `now`, the handler's
    /// output stored (or cleared), the lease ended, the worker kept; rows changed.
    async fn job_complete(&self, target: Target<'_, MemoryTx>, p: JobComplete<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobComplete).await?;
        self.on(target, |w, now| {
            let Some(mut row) = fenced(w, p.lease)? else {
                return Ok(0);
            };
            // The completion stores the output it is given, or clears it.
            if p.output.is_none() {
                row.output = None;
            }
            complete_row(w, row, p.output, p.keep, now)?;
            Ok(1)
        })
        .await
    }

    /// Completes every listed job whose lease is current (as `job_complete`, its output left
    /// as it is); rows changed.
    async fn job_complete_many(&self, leases: &[Lease], keep: bool) -> Result<u64> {
        let _call = self.enter(Statement::JobCompleteMany).await?;
        self.pool(|w, now| complete_many(w, leases, keep, now))
            .await
    }

    /// `job_complete_many` of `leases`, then `job_claim` of `p`, as one statement: both or
    /// neither.
    async fn job_complete_and_claim(
        &self,
        leases: &[Lease],
        keep: bool,
        p: JobClaim<'_>,
    ) -> Result<Option<(u64, Vec<Leased>)>> {
        let _call = self.enter(Statement::JobCompleteAndClaim).await?;
        self.pool(|w, now| {
            let done = complete_many(w, leases, keep, now)?;
            let claimed = claim(w, p, now)?;
            Ok(Some((done, claimed)))
        })
        .await
    }

    /// Back to pending, due `now` plus `p.delay`, if `p.lease` is current: the failure
    /// recorded in `last_error` and the history, the worker cleared (no one holds the job
    /// now), the lease ended; rows changed.
    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobFailRetry).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, p.lease)? else {
                return Ok(0);
            };
            record_failure(&mut row, p.error, now, p.errors_kept);
            row.state = JobState::Pending;
            row.run_at = after(now, p.delay, "a job's run time")?;
            row.worker = None;
            end_lease(&mut row);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// Dead and finished `now`, if `p.lease` is current: the failure recorded, the lease
    /// ended, the worker kept; rows changed.
    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobFailDead).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, p.lease)? else {
                return Ok(0);
            };
            record_failure(&mut row, p.error, now, p.errors_kept);
            row.state = JobState::Dead;
            row.finished_at = Some(now);
            end_lease(&mut row);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// Back to pending, due `now` plus `p.delay`, if `p.lease` is current and the job has
    /// snoozed fewer than `p.max_snoozes` times: the attempt given back, the snooze counted,
    /// the worker cleared, the lease ended; rows changed.
    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobSnooze).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, p.lease)?.filter(|r| r.snoozes < p.max_snoozes) else {
                return Ok(0);
            };
            row.state = JobState::Pending;
            row.run_at = after(now, p.delay, "a job's run time")?;
            row.attempts = row.attempts.saturating_sub(1);
            row.snoozes = row.snoozes.saturating_add(1);
            row.worker = None;
            end_lease(&mut row);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// The metadata and version of the job if `lease` is current.
    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>> {
        let _call = self.enter(Statement::JobMetaGet).await?;
        self.read(|t, _| {
            Ok(t.schema()?
                .jobs
                .get(lease.job_id)
                .filter(|row| row.leased_by(lease))
                .map(|row| StoredMeta {
                    meta: row.meta.as_ref().map(|m| m.get().to_owned()),
                    version: row.version,
                }))
        })
        .await
    }

    /// Writes the merged metadata if `p.lease` is current and the row still has `p.version`;
    /// rows changed.
    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobMetaSet).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, p.lease)?.filter(|r| r.version == p.version) else {
                return Ok(0);
            };
            row.meta = Some(json(p.meta, "meta")?);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// Back to pending, due `now`, if `lease` is current: the attempt given back, the worker
    /// cleared, the lease ended; rows changed.
    async fn job_release(&self, lease: &Lease) -> Result<u64> {
        let _call = self.enter(Statement::JobRelease).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, lease)? else {
                return Ok(0);
            };
            row.state = JobState::Pending;
            row.run_at = now;
            row.attempts = row.attempts.saturating_sub(1);
            row.worker = None;
            end_lease(&mut row);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(1)
        })
        .await
    }

    /// The lease ends `by` after `now`, if it is current; the new expiry.
    async fn job_extend(&self, lease: &Lease, by: Duration) -> Result<Option<DateTime<Utc>>> {
        let _call = self.enter(Statement::JobExtend).await?;
        self.pool(|w, now| {
            let Some(mut row) = fenced(w, lease)? else {
                return Ok(None);
            };
            let expires = after(now, by, "the lease's expiry")?;
            row.lease_expires_at = Some(expires);
            touch(&mut row, now);
            w.update_job(row)?;
            Ok(Some(expires))
        })
        .await
    }

    /// The job's state (why a transition changed nothing).
    async fn job_state(&self, target: Target<'_, MemoryTx>, id: JobId) -> Result<Option<JobState>> {
        let _call = self.enter(Statement::JobState).await?;
        self.read_on(target, |t, _| {
            Ok(t.schema()?.jobs.get(id).map(|row| row.state))
        })
        .await
    }

    /// Up to `limit` running jobs whose lease expired before `now`, the longest expired first.
    async fn job_expired(&self, limit: usize) -> Result<Vec<Expired>> {
        let _call = self.enter(Statement::JobExpired).await?;
        self.read(|t, now| {
            Ok(t.schema()?
                .jobs
                .expired(now)
                .filter_map(|row| {
                    Some(Expired {
                        id: row.id,
                        token: row.lease_token?,
                        queue: row.queue.clone(),
                        attempts: row.attempts,
                        max_attempts: row.max_attempts,
                    })
                })
                .take(limit)
                .collect())
        })
        .await
    }

    /// Each listed job still running under the listed token with a lease that expired before
    /// `now`: dead (finished `now`, the worker kept) when `p.dead`, else pending and due `now`
    /// (the worker cleared); the error recorded as a failure of the attempt whose lease
    /// expired, the lease ended. Rows changed.
    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobRescue).await?;
        self.pool(|w, now| {
            let mut done = 0;
            for (id, token) in p.jobs {
                let Some(mut row) = w.schema()?.jobs.get(*id).cloned().filter(|row| {
                    row.state == JobState::Running
                        && row.lease_token == Some(*token)
                        && row.lease_expires_at.is_some_and(|at| at < now)
                }) else {
                    continue;
                };
                record_failure(&mut row, p.error, now, p.errors_kept);
                if p.dead {
                    row.state = JobState::Dead;
                    row.finished_at = Some(now);
                } else {
                    row.state = JobState::Pending;
                    row.run_at = now;
                    row.finished_at = None;
                    row.worker = None;
                }
                end_lease(&mut row);
                touch(&mut row, now);
                w.update_job(row)?;
                done += 1;
            }
            Ok(done)
        })
        .await
    }

    /// A pending or running job to cancelled, finished `now`, its lease token kept (so that
    /// its holder learns of it) and its expiry cleared; rows changed.
    async fn job_cancel(&self, id: JobId) -> Result<u64> {
        let _call = self.enter(Statement::JobCancel).await?;
        self.pool(|w, now| {
            let Some(row) = in_state(w, id, &LIVE)? else {
                return Ok(0);
            };
            w.update_job(cancelled(row, now))?;
            Ok(1)
        })
        .await
    }

    /// A dead or cancelled job back to pending (a step of a workflow: to waiting), due `now`,
    /// attempts and snoozes reset (its history kept); its queue. Refused when its dedup key is
    /// held by a live job, or its unique key by a job in its states.
    async fn job_retry(&self, tx: &mut MemoryTx, id: JobId) -> Result<Option<String>> {
        let _call = self.enter(Statement::JobRetry).await?;
        let now = self.store.now();
        tx.statement(|w| {
            let Some(row) = in_state(w, id, &[JobState::Dead, JobState::Cancelled])? else {
                return Ok(None);
            };
            Ok(Some(w.update_job(retried(row, now))?.queue.clone()))
        })
    }

    /// A pending job's run time (`now` plus `p.delay`) and priority, each when given; its
    /// queue.
    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>> {
        let _call = self.enter(Statement::JobReschedule).await?;
        self.pool(|w, now| {
            let Some(mut row) = in_state(w, p.id, &[JobState::Pending])? else {
                return Ok(None);
            };
            if let Some(delay) = p.delay {
                row.run_at = after(now, delay, "a job's run time")?;
            }
            if let Some(priority) = p.priority {
                row.priority = priority;
            }
            touch(&mut row, now);
            Ok(Some(w.update_job(row)?.queue.clone()))
        })
        .await
    }

    /// One job, with its history and output.
    async fn job_get(&self, id: JobId) -> Result<Option<Job>> {
        let _call = self.enter(Statement::JobGet).await?;
        self.read(|t, _| {
            let schema = t.schema()?;
            Ok(schema.jobs.get(id).map(|row| Job {
                step: row
                    .workflow
                    .and_then(|w| schema.workflow_jobs.get(&(w, id)).cloned()),
                ..row.job_detail()
            }))
        })
        .await
    }

    /// Jobs newest first (by id), below `req.before`, filtered by queue, state and kind; without
    /// their history and output (which `job_get` reads).
    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>> {
        let _call = self.enter(Statement::JobList).await?;
        self.read(|t, _| {
            Ok(t.schema()?
                .jobs
                .newest_first(req.before)
                .filter(|row| {
                    req.queue.as_deref().is_none_or(|q| row.queue == q)
                        && req.state.is_none_or(|s| row.state == s)
                        && req
                            .kind
                            .as_deref()
                            .is_none_or(|k| row.kind.as_deref() == Some(k))
                })
                .take(req.limit)
                .map(JobRow::job)
                .collect())
        })
        .await
    }

    /// Counts per queue with jobs, by name: pending jobs due at `now` (available) and later
    /// (scheduled), running jobs, and finished ones per state up to `cap` each; and the
    /// `run_at` of the available job due the longest. The counts of each queue and state are
    /// kept with every write, so no finished job is read to count.
    async fn job_stats(&self, queue: Option<&str>, cap: Option<u64>) -> Result<Vec<QueueStats>> {
        let _call = self.enter(Statement::JobStats).await?;
        self.read(|t, now| {
            let jobs = &t.schema()?.jobs;
            let capped = |n: u64| cap.map_or(n, |c| n.min(c));
            let stats = |name: &str, q: &crate::jobs::QueueJobs| {
                let (available, scheduled) = q.pending_counts(now);
                QueueStats {
                    queue: name.to_owned(),
                    waiting: q.count(JobState::Waiting),
                    available,
                    scheduled,
                    running: q.count(JobState::Running),
                    oldest_due: q.oldest_due(now),
                    completed: capped(q.count(JobState::Completed)),
                    dead: capped(q.count(JobState::Dead)),
                    cancelled: capped(q.count(JobState::Cancelled)),
                    ..QueueStats::default()
                }
            };
            Ok(match queue {
                Some(name) => jobs
                    .queue(name)
                    .map(|q| stats(name, q))
                    .into_iter()
                    .collect(),
                None => jobs.queues().map(|(name, q)| stats(name, q)).collect(),
            })
        })
        .await
    }

    /// Deletes up to `p.limit` finished jobs outside workflows in `p.states` (of `p.queue` when
    /// given) that finished before `now` less `p.older_than`, the earliest finished first; rows
    /// deleted.
    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobPrune).await?;
        self.pool(|w, now| {
            let cutoff = before(now, p.older_than);
            let doomed: Vec<JobId> = w
                .schema()?
                .jobs
                .finished_before(cutoff)
                .filter(|row| {
                    row.state.is_finished()
                        && row.workflow.is_none()
                        && p.states.contains(&row.state)
                        && p.queue.is_none_or(|q| row.queue == q)
                })
                .take(p.limit)
                .map(|row| row.id)
                .collect();
            for id in &doomed {
                w.delete_job(*id)?;
            }
            Ok(doomed.len() as u64)
        })
        .await
    }

    /// The ids and queues of up to `m.limit` jobs that `m` matches, newest first, below
    /// `m.before`.
    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>> {
        let _call = self.enter(Statement::JobIds).await?;
        self.read(|t, now| {
            Ok(matching(t, m, now, m.before)?
                .take(m.limit)
                .map(|row| (row.id, row.queue.clone()))
                .collect())
        })
        .await
    }

    /// How many jobs `m` matches.
    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobCount).await?;
        self.read(|t, now| Ok(matching(t, m, now, None)?.count() as u64))
            .await
    }

    /// `job_cancel` of each listed job that is pending or running; rows changed.
    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64> {
        let _call = self.enter(Statement::JobCancelMany).await?;
        self.pool(|w, now| update_each(w, ids, &LIVE, |row| cancelled(row, now)))
            .await
    }

    /// `job_retry` of each listed job that is dead or cancelled, as one statement: a key that
    /// refuses one of them refuses them all; rows changed.
    async fn job_retry_many(&self, tx: &mut MemoryTx, ids: &[JobId]) -> Result<u64> {
        let _call = self.enter(Statement::JobRetryMany).await?;
        let now = self.store.now();
        tx.statement(|w| {
            update_each(w, ids, &[JobState::Dead, JobState::Cancelled], |row| {
                retried(row, now)
            })
        })
    }

    /// The workflows of the listed jobs, each once, in id order.
    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>> {
        let _call = self.enter(Statement::JobWorkflows).await?;
        self.read(|t, _| {
            let jobs = &t.schema()?.jobs;
            let mut out: Vec<WorkflowId> = ids
                .iter()
                .filter_map(|id| jobs.get(*id).and_then(|r| r.workflow))
                .collect();
            out.sort();
            out.dedup();
            Ok(out)
        })
        .await
    }

    /// How many waiting jobs have a dependency of policy `Completed` among the jobs `m`
    /// matches, read from the waiting jobs.
    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64> {
        let _call = self.enter(Statement::JobDependentsCount).await?;
        self.read(|t, now| {
            let schema = t.schema()?;
            let mut n = 0;
            for job in schema.jobs.waiting_after(None) {
                let needs_a_match = schema.deps_of(job).any(|(dep, policy)| {
                    policy == DepPolicy::Completed
                        && schema.jobs.get(dep).is_some_and(|d| matches(m, d, now))
                });
                if needs_a_match {
                    n += 1;
                }
            }
            Ok(n)
        })
        .await
    }

    /// Deletes each listed job whose state is one of `states` (never a running one); rows
    /// deleted.
    async fn job_delete_many(&self, ids: &[JobId], states: &[JobState]) -> Result<u64> {
        let _call = self.enter(Statement::JobDeleteMany).await?;
        self.pool(|w, _| {
            let mut done = 0;
            for id in ids {
                let doomed = w.schema()?.jobs.get(*id).is_some_and(|row| {
                    states.contains(&row.state) && row.state != JobState::Running
                });
                if doomed && w.delete_job(*id)? {
                    done += 1;
                }
            }
            Ok(done)
        })
        .await
    }

    /// Takes the lease row of `task` when its next run is due (`next_at <= now`), or renews it
    /// when `token` holds it already: it is held under `token` until `now` plus `lease`.
    /// Whether it was taken.
    async fn maintenance_claim(&self, task: &str, token: Uuid, lease: Duration) -> Result<bool> {
        let _call = self.enter(Statement::MaintenanceClaim).await?;
        self.pool(|w, now| {
            let due = w
                .schema()?
                .maintenance
                .get(task)
                .is_some_and(|row| row.next_at <= now || row.token == Some(token));
            if !due {
                return Ok(false);
            }
            let next_at = after(now, lease, "a maintenance lease")?;
            w.put_maintenance(
                task,
                MaintenanceRow {
                    next_at,
                    token: Some(token),
                },
            )?;
            Ok(true)
        })
        .await
    }

    /// The round of `task` under `token` is over: the next is due `next_in` after `now`. A
    /// round whose lease was taken over changes nothing.
    async fn maintenance_release(&self, task: &str, token: Uuid, next_in: Duration) -> Result<()> {
        let _call = self.enter(Statement::MaintenanceRelease).await?;
        self.pool(|w, now| {
            let held = w
                .schema()?
                .maintenance
                .get(task)
                .is_some_and(|row| row.token == Some(token));
            if held {
                let next_at = after(now, next_in, "a maintenance task's next run")?;
                w.put_maintenance(
                    task,
                    MaintenanceRow {
                        next_at,
                        token: None,
                    },
                )?;
            }
            Ok(())
        })
        .await
    }

    /// Wakes the queue values on the store (other than this one) that wait on `queues`.
    async fn notify(&self, queues: &[&str]) -> Result<()> {
        let _call = self.enter(Statement::Notify).await?;
        for queue in queues {
            self.store.notify(self.id, queue, 1);
        }
        Ok(())
    }

    /// Registers `hub` for the wake-ups other queue values on the store send for `queue`.
    fn watch(&self, queue: &str, hub: &Arc<WakeHub>) {
        if let Some(faults) = self.faults.get() {
            faults.enter_sync(Statement::Watch);
        }
        self.store.watch(self.id, queue, hub);
    }

    type Tx = MemoryTx;

    /// Takes the store's lock until the transaction ends (serializable: nothing else runs
    /// meanwhile).
    async fn tx_begin(&self) -> Result<MemoryTx> {
        let _call = self.enter(Statement::TxBegin).await?;
        Ok(self.store.begin().await)
    }

    fn tx_conn(tx: &mut MemoryTx) -> &mut MemoryTx {
        tx
    }

    /// Keeps the transaction's writes, and sends the wake-ups of the jobs it pushed.
    async fn tx_commit(&self, tx: MemoryTx) -> Result<()> {
        let _call = self.enter(Statement::TxCommit).await?;
        let wakeups = tx.commit();
        self.wake_others(&wakeups);
        Ok(())
    }

    /// Undoes every write of the transaction.
    async fn tx_rollback(&self, tx: MemoryTx) -> Result<()> {
        let _call = self.enter(Statement::TxRollback).await?;
        tx.rollback();
        Ok(())
    }

    type Savepoint<'c> = MemorySavepoint<'c>;

    /// Marks where the transaction's undo log ends now.
    async fn savepoint<'c>(&self, tx: &'c mut MemoryTx) -> Result<MemorySavepoint<'c>> {
        let _call = self.enter(Statement::Savepoint).await?;
        Ok(MemorySavepoint::set(tx))
    }

    /// Keeps the writes made since the savepoint, as the transaction's.
    async fn savepoint_release(&self, savepoint: MemorySavepoint<'_>) -> Result<()> {
        let _call = self.enter(Statement::SavepointRelease).await?;
        savepoint.release();
        Ok(())
    }

    /// Undoes the writes made since the savepoint, newest first, and drops the wake-ups queued
    /// since.
    async fn savepoint_rollback(&self, savepoint: MemorySavepoint<'_>) -> Result<()> {
        let _call = self.enter(Statement::SavepointRollback).await?;
        savepoint.rollback();
        Ok(())
    }

    /// The controls of `queue`, `None` when it has no row.
    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>> {
        let _call = self.enter(Statement::QueueControlGet).await?;
        self.read(|t, _| Ok(t.schema()?.queues.get(queue).map(|row| row.control(queue))))
            .await
    }

    /// `queue_control_get` inside the controlled claim's transaction, whose hold of the
    /// store's lock is the queue's lock.
    async fn queue_control_lock(
        &self,
        conn: &mut MemoryTx,
        queue: &str,
    ) -> Result<Option<QueueControl>> {
        let _call = self.enter(Statement::QueueControlLock).await?;
        self.read_on(Target::Tx(conn), |t, _| {
            Ok(t.schema()?.queues.get(queue).map(|row| row.control(queue)))
        })
        .await
    }

    /// Every queue's controls, by name.
    async fn queue_control_list(&self) -> Result<Vec<QueueControl>> {
        let _call = self.enter(Statement::QueueControlList).await?;
        self.read(|t, _| {
            Ok(t.schema()?
                .queues
                .iter()
                .map(|(name, row)| row.control(name))
                .collect())
        })
        .await
    }

    /// Pauses or resumes `queue` (its row made when missing).
    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<()> {
        let _call = self.enter(Statement::QueueSetPaused).await?;
        self.pool(|w, now| set_control(w, queue, now, |row| row.paused = paused))
            .await
    }

    /// Sets or removes the concurrency limit of `queue` (its row made when missing).
    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        let _call = self.enter(Statement::QueueSetLimit).await?;
        self.pool(|w, now| set_control(w, queue, now, |row| row.concurrency_limit = limit))
            .await
    }

    /// Sets or removes the rate limit of `queue` (its row made when missing); its count starts
    /// afresh (no window).
    async fn queue_set_rate(&self, queue: &str, rate: Option<(u32, i64)>) -> Result<()> {
        let _call = self.enter(Statement::QueueSetRate).await?;
        self.pool(|w, now| {
            set_control(w, queue, now, |row| {
                row.rate = rate;
                row.rate_window = None;
                row.rate_count = 0;
            })
        })
        .await
    }

    /// The rate window and count of `queue`, with the clock now in microseconds; no window and
    /// no count when it has no row.
    async fn queue_rate_state(&self, conn: &mut MemoryTx, queue: &str) -> Result<RateState> {
        let _call = self.enter(Statement::QueueRateState).await?;
        self.read_on(Target::Tx(conn), |t, now| {
            let row = t.schema()?.queues.get(queue);
            Ok(RateState {
                window: row.and_then(|r| r.rate_window),
                count: row.map_or(0, |r| r.rate_count),
                now_us: now.timestamp_micros(),
            })
        })
        .await
    }

    /// Records that `count` jobs of `queue` started in `window`.
    async fn queue_rate_record(
        &self,
        conn: &mut MemoryTx,
        queue: &str,
        window: i64,
        count: u32,
    ) -> Result<()> {
        let _call = self.enter(Statement::QueueRateRecord).await?;
        self.on(Target::Tx(conn), |w, _| {
            update_control(w, queue, |row| {
                row.rate_window = Some(window);
                row.rate_count = count;
            })
        })
        .await
    }

    /// Sets or removes the key limit of `queue` (its row made when missing).
    async fn queue_set_key_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        let _call = self.enter(Statement::QueueSetKeyLimit).await?;
        self.pool(|w, now| set_control(w, queue, now, |row| row.key_limit = limit))
            .await
    }

    /// Sets or removes the key rate limit of `queue` (its row made when missing), and forgets
    /// the counts of its keys.
    async fn queue_set_key_rate(&self, queue: &str, rate: Option<(u32, i64)>) -> Result<()> {
        let _call = self.enter(Statement::QueueSetKeyRate).await?;
        self.pool(|w, now| {
            set_control(w, queue, now, |row| row.key_rate = rate)?;
            let keys: Vec<String> = w
                .schema()?
                .key_rates
                .range((queue.to_owned(), String::new())..)
                .take_while(|((q, _), _)| q == queue)
                .map(|((_, key), _)| key.clone())
                .collect();
            for key in keys {
                w.put_key_rate(queue, &key, None)?;
            }
            Ok(())
        })
        .await
    }

    /// The window of `key`'s count of starts in `queue`, and that count.
    async fn queue_key_rate_get(
        &self,
        conn: &mut MemoryTx,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>> {
        let _call = self.enter(Statement::QueueKeyRateGet).await?;
        self.read_on(Target::Tx(conn), |t, _| {
            Ok(t.schema()?
                .key_rates
                .get(&(queue.to_owned(), key.to_owned()))
                .map(|c| (c.window, c.count)))
        })
        .await
    }

    /// Records that `count` jobs of `key` in `queue` started in `window`.
    async fn queue_key_rate_put(
        &self,
        conn: &mut MemoryTx,
        queue: &str,
        key: &str,
        window: i64,
        count: u32,
    ) -> Result<()> {
        let _call = self.enter(Statement::QueueKeyRatePut).await?;
        self.on(Target::Tx(conn), |w, _| {
            w.put_key_rate(queue, key, Some(RateCount { window, count }))
        })
        .await
    }

    /// Turns fair shares of `queue` on or off (its row made when missing).
    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<()> {
        let _call = self.enter(Statement::QueueSetFair).await?;
        self.pool(|w, now| set_control(w, queue, now, |row| row.fair_shares = on))
            .await
    }

    /// Records the key the keyed claim of `queue` served last (`None`: the jobs without a key).
    async fn queue_key_cursor(
        &self,
        conn: &mut MemoryTx,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<()> {
        let _call = self.enter(Statement::QueueKeyCursor).await?;
        self.on(Target::Tx(conn), |w, _| {
            update_control(w, queue, |row| row.key_cursor = cursor.map(str::to_owned))
        })
        .await
    }

    /// For each concurrency key of `queue`, how many of its jobs run under a lease that has not
    /// expired at `now`: the most first, then by key. Jobs without a key are left out.
    async fn job_key_leases(
        &self,
        target: Target<'_, MemoryTx>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>> {
        let _call = self.enter(Statement::JobKeyLeases).await?;
        self.read_on(target, |t, now| {
            let jobs = &t.schema()?.jobs;
            let mut per_key: BTreeMap<&str, u64> = BTreeMap::new();
            if let Some(q) = jobs.queue(queue) {
                for id in q.live_leases(now) {
                    if let Some(key) = jobs.get(id).and_then(|r| r.concurrency_key.as_deref()) {
                        *per_key.entry(key).or_default() += 1;
                    }
                }
            }
            let mut leases: Vec<(String, u64)> = per_key
                .into_iter()
                .map(|(key, n)| (key.to_owned(), n))
                .collect();
            leases.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            Ok(leases)
        })
        .await
    }

    /// The `n` smallest concurrency keys above `after` (byte order) that pending jobs of
    /// `queue` have, due or not: the next keys of the queue's index of keyed pending jobs.
    async fn job_key_next(
        &self,
        conn: &mut MemoryTx,
        queue: &str,
        after: &str,
        n: usize,
    ) -> Result<Vec<String>> {
        let _call = self.enter(Statement::JobKeyNext).await?;
        self.read_on(Target::Tx(conn), |t, _| {
            let Some(q) = t.schema()?.jobs.queue(queue) else {
                return Ok(Vec::new());
            };
            Ok(q.keyed
                .range::<str, _>((Bound::Excluded(after), Bound::Unbounded))
                .take(n)
                .map(|(key, _)| key.clone())
                .collect())
        })
        .await
    }

    /// Claims up to `p.limit` due pending jobs of `p.queue` with the concurrency key `key`
    /// (`None`: without a key), in claim order, as `job_claim` with the controls checked.
    async fn job_claim_key(
        &self,
        conn: &mut MemoryTx,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>> {
        let _call = self.enter(Statement::JobClaimKey).await?;
        let among = key.map_or(Among::Unkeyed, Among::Key);
        self.on(Target::Tx(conn), |w, now| {
            let ids = due(w.tables(), p.queue, among, now, p.limit)?;
            claim_rows(w, ids, p, now)
        })
        .await
    }

    /// Deletes up to `limit` of `queue`'s key rate counts whose window is before `before`;
    /// how many.
    async fn queue_key_rate_prune(&self, queue: &str, before: i64, limit: usize) -> Result<u64> {
        let _call = self.enter(Statement::QueueKeyRatePrune).await?;
        self.pool(|w, _| {
            let ended: Vec<String> = w
                .schema()?
                .key_rates
                .range((queue.to_owned(), String::new())..)
                .take_while(|((q, _), _)| q == queue)
                .filter(|(_, c)| c.window < before)
                .take(limit)
                .map(|((_, key), _)| key.clone())
                .collect();
            for key in &ended {
                w.put_key_rate(queue, key, None)?;
            }
            Ok(ended.len() as u64)
        })
        .await
    }

    /// How many pending jobs of `queue` with the concurrency key `key` are due at `now`.
    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64> {
        let _call = self.enter(Statement::JobKeyWaiting).await?;
        self.read(|t, now| {
            Ok(t.schema()?
                .jobs
                .queue(queue)
                .and_then(|q| q.keyed.get(key))
                .map_or(0, |order| order.due(now).count() as u64))
        })
        .await
    }

    /// How many jobs of `queue` run under a lease that has not expired at `now`.
    async fn job_live_leases(&self, conn: &mut MemoryTx, queue: &str) -> Result<u64> {
        let _call = self.enter(Statement::JobLiveLeases).await?;
        self.read_on(Target::Tx(conn), |t, now| {
            Ok(t.schema()?
                .jobs
                .queue(queue)
                .map_or(0, |q| q.live_leases(now).count() as u64))
        })
        .await
    }

    /// One schedule, with the state of its last slot's job.
    async fn schedule_get(&self, name: &str) -> Result<Option<StoredSchedule>> {
        let _call = self.enter(Statement::ScheduleGet).await?;
        self.read(|t, _| {
            t.schema()?
                .schedules
                .get(name)
                .map(|s| schedule_read(t, s))
                .transpose()
        })
        .await
    }

    /// Every schedule by name, each with the state of its last slot's job.
    async fn schedule_list(&self) -> Result<Vec<StoredSchedule>> {
        let _call = self.enter(Statement::ScheduleList).await?;
        self.read(|t, _| {
            t.schema()?
                .schedules
                .values()
                .map(|s| schedule_read(t, s))
                .collect()
        })
        .await
    }

    /// A new schedule; refused when one of that name exists.
    async fn schedule_insert(&self, s: &StoredSchedule) -> Result<()> {
        let _call = self.enter(Statement::ScheduleInsert).await?;
        self.pool(|w, _| {
            if w.schema()?.schedules.contains_key(&s.name) {
                return Err(MemoryError::ScheduleExists(s.name.clone()));
            }
            w.put_schedule(&s.name, Some(schedule_stored(s)))
        })
        .await
    }

    /// Writes every column of `s` but `created_at` if the row still has `version`; rows changed.
    async fn schedule_update(&self, s: &StoredSchedule, version: i64) -> Result<u64> {
        let _call = self.enter(Statement::ScheduleUpdate).await?;
        self.pool(|w, _| {
            let Some(old) = w
                .schema()?
                .schedules
                .get(&s.name)
                .filter(|old| old.version == version)
            else {
                return Ok(0);
            };
            let row = StoredSchedule {
                created_at: old.created_at,
                ..schedule_stored(s)
            };
            w.put_schedule(&s.name, Some(row))?;
            Ok(1)
        })
        .await
    }

    /// Moves the lease of the code schedule `name` to `expires_at`, never earlier than it is,
    /// its version untouched; rows changed.
    async fn schedule_touch(&self, name: &str, expires_at: DateTime<Utc>) -> Result<u64> {
        let _call = self.enter(Statement::ScheduleTouch).await?;
        self.pool(|w, _| {
            let Some(mut row) = w
                .schema()?
                .schedules
                .get(name)
                .filter(|s| s.origin == "code")
                .cloned()
            else {
                return Ok(0);
            };
            let asked = expires_at.trunc_subsecs(6);
            row.expires_at = Some(row.expires_at.map_or(asked, |t| t.max(asked)));
            w.put_schedule(name, Some(row))?;
            Ok(1)
        })
        .await
    }

    /// The slot compare-and-set: if the schedule still has `p.version`, its last slot and last
    /// job become `p`'s and its version moves on; rows changed.
    async fn schedule_advance(
        &self,
        target: Target<'_, MemoryTx>,
        p: ScheduleAdvance<'_>,
    ) -> Result<u64> {
        let _call = self.enter(Statement::ScheduleAdvance).await?;
        self.on(target, |w, _| {
            let Some(mut row) = w
                .schema()?
                .schedules
                .get(p.name)
                .filter(|s| s.version == p.version)
                .cloned()
            else {
                return Ok(0);
            };
            row.last_slot = Some(p.last_slot.trunc_subsecs(6));
            row.last_job = Some(p.last_job);
            row.version += 1;
            row.updated_at = p.now.trunc_subsecs(6);
            w.put_schedule(p.name, Some(row))?;
            Ok(1)
        })
        .await
    }

    /// Deletes the schedule `name` if it still has `version`; rows deleted.
    async fn schedule_delete(&self, name: &str, version: i64) -> Result<u64> {
        let _call = self.enter(Statement::ScheduleDelete).await?;
        self.pool(|w, _| {
            let current = w
                .schema()?
                .schedules
                .get(name)
                .is_some_and(|s| s.version == version);
            if !current {
                return Ok(0);
            }
            w.put_schedule(name, None)?;
            Ok(1)
        })
        .await
    }

    /// The workflow's row, created now; refused when its id exists.
    async fn workflow_insert(&self, tx: &mut MemoryTx, w: WorkflowInsert<'_>) -> Result<()> {
        let _call = self.enter(Statement::WorkflowInsert).await?;
        let now = self.store.now();
        tx.statement(|wr| {
            if wr.schema()?.workflows.contains_key(&w.id) {
                return Err(MemoryError::WorkflowExists(w.id));
            }
            wr.put_workflow(
                w.id,
                Some(StoredWorkflow {
                    id: w.id,
                    name: w.name.map(str::to_owned),
                    open: w.open,
                    callback: w.callback,
                    created_at: now,
                }),
            )
        })
    }

    /// One step row per `(job, step)`.
    async fn workflow_steps_insert(
        &self,
        tx: &mut MemoryTx,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<()> {
        let _call = self.enter(Statement::WorkflowStepsInsert).await?;
        tx.statement(|w| {
            for (job, step) in steps {
                w.put_workflow_job(workflow, *job, step)?;
            }
            Ok(())
        })
    }

    /// One dependency row per edge.
    async fn workflow_deps_insert(&self, tx: &mut MemoryTx, edges: &[WorkflowEdge]) -> Result<()> {
        let _call = self.enter(Statement::WorkflowDepsInsert).await?;
        tx.statement(|w| {
            for e in edges {
                w.put_dep(e.dep, e.job, e.policy)?;
            }
            Ok(())
        })
    }

    /// The workflow's row (the transaction holds the store, which is the lock).
    async fn workflow_lock(
        &self,
        tx: &mut MemoryTx,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>> {
        let _call = self.enter(Statement::WorkflowLock).await?;
        Ok(tx.tables().schema()?.workflows.get(&id).cloned())
    }

    /// An open workflow closed; rows changed.
    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64> {
        let _call = self.enter(Statement::WorkflowSeal).await?;
        self.pool(|w, _| {
            let Some(row) = w.schema()?.workflows.get(&id).filter(|r| r.open).cloned() else {
                return Ok(0);
            };
            w.put_workflow(id, Some(StoredWorkflow { open: false, ..row }))?;
            Ok(1)
        })
        .await
    }

    /// The waiting jobs that depend on any of `finished`, each once, in id order.
    async fn workflow_dependents(
        &self,
        target: Target<'_, MemoryTx>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>> {
        let _call = self.enter(Statement::WorkflowDependents).await?;
        self.read_on(target, |t, _| {
            let schema = t.schema()?;
            let mut out: Vec<JobId> = finished
                .iter()
                .flat_map(|dep| schema.dependents(*dep))
                .map(|(job, _)| job)
                .filter(|job| {
                    schema
                        .jobs
                        .get(*job)
                        .is_some_and(|r| r.state == JobState::Waiting)
                })
                .collect();
            out.sort();
            out.dedup();
            Ok(out)
        })
        .await
    }

    /// Each of `waiting` still waiting with a dependency of policy `Completed` that is dead,
    /// cancelled or deleted: cancelled now, `blocked_by` the least such dependency.
    async fn workflow_block(
        &self,
        target: Target<'_, MemoryTx>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>> {
        let _call = self.enter(Statement::WorkflowBlock).await?;
        self.on(target, |w, now| {
            let mut out = Vec::new();
            for id in waiting {
                let Some(row) = in_state(w, *id, &[JobState::Waiting])? else {
                    continue;
                };
                let Some(blocker) = blocker(w.schema()?, *id) else {
                    continue;
                };
                let mut row = cancelled(row, now);
                row.blocked_by = Some(blocker);
                w.update_job(row)?;
                out.push(*id);
            }
            Ok(out)
        })
        .await
    }

    /// Each of `waiting` still waiting whose every dependency is resolved (completed; or
    /// finished or deleted, for `AnyOutcome`), unless it is the callback of an open workflow:
    /// pending, due at the later of its run time and now.
    async fn workflow_promote(
        &self,
        target: Target<'_, MemoryTx>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>> {
        let _call = self.enter(Statement::WorkflowPromote).await?;
        self.on(target, |w, now| {
            let mut out = Vec::new();
            for id in waiting {
                let Some(mut row) = in_state(w, *id, &[JobState::Waiting])? else {
                    continue;
                };
                let schema = w.schema()?;
                let ready = schema.deps_of(*id).all(|(dep, policy)| {
                    schema
                        .jobs
                        .get(dep)
                        .map_or(policy == DepPolicy::AnyOutcome, |d| {
                            policy.resolved_by(d.state)
                        })
                });
                let held = row.workflow.is_some_and(|wf| {
                    schema
                        .workflows
                        .get(&wf)
                        .is_some_and(|r| r.open && r.callback == Some(*id))
                });
                if !ready || held {
                    continue;
                }
                row.state = JobState::Pending;
                row.run_at = row.run_at.max(now);
                touch(&mut row, now);
                out.push((*id, w.update_job(row)?.queue.clone()));
            }
            Ok(out)
        })
        .await
    }

    /// The cancelled jobs depending on one of `retried` and blocked by it: waiting again.
    async fn workflow_reopen(&self, tx: &mut MemoryTx, retried: &[JobId]) -> Result<Vec<JobId>> {
        let _call = self.enter(Statement::WorkflowReopen).await?;
        self.on(Target::Tx(tx), |w, now| {
            let candidates: Vec<JobId> = {
                let schema = w.schema()?;
                retried
                    .iter()
                    .flat_map(|dep| schema.dependents(*dep))
                    .map(|(job, _)| job)
                    .collect()
            };
            let mut out = Vec::new();
            for id in candidates {
                let Some(mut row) = in_state(w, id, &[JobState::Cancelled])? else {
                    continue;
                };
                if !row.blocked_by.is_some_and(|b| retried.contains(&b)) {
                    continue;
                }
                row.state = JobState::Waiting;
                row.blocked_by = None;
                row.finished_at = None;
                touch(&mut row, now);
                w.update_job(row)?;
                out.push(id);
            }
            Ok(out)
        })
        .await
    }

    /// Of `ids`, each with a dependency of policy `Completed` that is dead, cancelled or
    /// deleted, with the least such.
    async fn workflow_blocked(
        &self,
        tx: &mut MemoryTx,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>> {
        let _call = self.enter(Statement::WorkflowBlocked).await?;
        let schema = tx.tables().schema()?;
        Ok(ids
            .iter()
            .filter_map(|id| blocker(schema, *id).map(|dep| (*id, dep)))
            .collect())
    }

    /// Up to `limit` waiting jobs in id order, after `after`.
    async fn workflow_waiting(&self, after: Option<JobId>, limit: usize) -> Result<Vec<JobId>> {
        let _call = self.enter(Statement::WorkflowWaiting).await?;
        self.read(|t, _| Ok(t.schema()?.jobs.waiting_after(after).take(limit).collect()))
            .await
    }

    /// The workflow's row.
    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>> {
        let _call = self.enter(Statement::WorkflowGet).await?;
        self.read(|t, _| Ok(t.schema()?.workflows.get(&id).cloned()))
            .await
    }

    /// The workflow's jobs in id order, each with its step.
    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>> {
        let _call = self.enter(Statement::WorkflowJobs).await?;
        self.read(|t, _| {
            let schema = t.schema()?;
            Ok(workflow_members(schema, id)
                .filter_map(|(job, step)| {
                    schema.jobs.get(job).map(|row| Job {
                        step: Some(step.to_owned()),
                        ..row.job()
                    })
                })
                .collect())
        })
        .await
    }

    /// The dependencies of the workflow's jobs.
    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>> {
        let _call = self.enter(Statement::WorkflowEdges).await?;
        self.read(|t, _| {
            let schema = t.schema()?;
            Ok(workflow_members(schema, id)
                .flat_map(|(job, _)| {
                    schema
                        .deps_of(job)
                        .map(move |(dep, policy)| WorkflowEdge { job, dep, policy })
                })
                .collect())
        })
        .await
    }

    /// Up to `limit` workflows, newest first, below `before`, with their jobs per state.
    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>> {
        let _call = self.enter(Statement::WorkflowList).await?;
        self.read(|t, _| {
            let schema = t.schema()?;
            let rows = match before {
                Some(id) => schema.workflows.range(..id),
                None => schema.workflows.range(..),
            };
            Ok(rows
                .rev()
                .take(limit)
                .map(|(id, row)| {
                    let mut counts: BTreeMap<usize, (JobState, u64)> = BTreeMap::new();
                    for (job, _) in workflow_members(schema, *id) {
                        if let Some(r) = schema.jobs.get(job) {
                            let i = JobState::ALL
                                .iter()
                                .position(|s| *s == r.state)
                                .unwrap_or(0);
                            counts.entry(i).or_insert((r.state, 0)).1 += 1;
                        }
                    }
                    (row.clone(), counts.into_values().collect())
                })
                .collect())
        })
        .await
    }

    /// Up to `p.limit` workflows created before `now` less `p.older_than`, after `p.after`,
    /// in `(created_at, id)` order (the transaction holds the store, which is the lock).
    async fn workflow_prune_lock(
        &self,
        tx: &mut MemoryTx,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>> {
        let _call = self.enter(Statement::WorkflowPruneLock).await?;
        let bound = before(self.store.now(), p.older_than);
        let schema = tx.tables().schema()?;
        let mut rows: Vec<(DateTime<Utc>, WorkflowId)> = schema
            .workflows
            .values()
            .map(|w| (w.created_at, w.id))
            .filter(|key| key.0 < bound && p.after.is_none_or(|after| *key > after))
            .collect();
        rows.sort();
        Ok(rows
            .into_iter()
            .take(p.limit)
            .map(|(at, id)| (id, at))
            .collect())
    }

    /// Each workflow of `p.ids` whose every job is finished longer ago than its state's age:
    /// deleted, with its jobs, their step and dependency rows; how many, and their jobs.
    async fn workflow_prune(
        &self,
        tx: &mut MemoryTx,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned> {
        let _call = self.enter(Statement::WorkflowPrune).await?;
        let now = self.store.now();
        tx.statement(|w| {
            let doomed: Vec<(WorkflowId, Vec<JobId>)> = {
                let schema = w.schema()?;
                p.ids
                    .iter()
                    .filter(|id| schema.workflows.contains_key(id))
                    .filter(|id| {
                        workflow_members(schema, **id).all(|(job, _)| {
                            schema.jobs.get(job).is_none_or(|row| {
                                let age = p.age(row.state);
                                match (age, row.finished_at) {
                                    (Some(age), Some(at)) => at < before(now, age),
                                    _ => false,
                                }
                            })
                        })
                    })
                    .map(|id| {
                        (
                            *id,
                            workflow_members(schema, *id).map(|(job, _)| job).collect(),
                        )
                    })
                    .collect()
            };
            let mut done = WorkflowPruned::default();
            for (id, jobs) in &doomed {
                for job in jobs {
                    let deps: Vec<JobId> = w.schema()?.deps_of_ids(*job).collect();
                    for dep in deps {
                        w.delete_dep(dep, *job)?;
                    }
                    w.delete_workflow_job(*id, *job)?;
                    if w.delete_job(*job)? {
                        done.jobs += 1;
                    }
                }
                w.put_workflow(*id, None)?;
                done.workflows += 1;
            }
            Ok(done)
        })
    }

    /// What `id` depends on, in the dependencies' id order, each with its step, policy, state
    /// and output (`None` when its job is gone).
    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>> {
        let _call = self.enter(Statement::JobDeps).await?;
        self.read(|t, _| {
            let schema = t.schema()?;
            let workflow = schema.jobs.get(id).and_then(|r| r.workflow);
            Ok(schema
                .deps_of(id)
                .map(|(dep, policy)| {
                    let row = schema.jobs.get(dep);
                    Dependency {
                        id: dep,
                        step: workflow
                            .and_then(|w| schema.workflow_jobs.get(&(w, dep)).cloned())
                            .unwrap_or_default(),
                        policy,
                        state: row.map(|r| r.state),
                        output: row.and_then(|r| r.output.clone()),
                    }
                })
                .collect())
        })
        .await
    }
}

/// The least dependency of `job` with policy `Completed` that ended dead or cancelled, or was
/// deleted.
fn blocker(schema: &crate::tables::Schema, job: JobId) -> Option<JobId> {
    schema.deps_of(job).find_map(|(dep, policy)| {
        let failed = schema
            .jobs
            .get(dep)
            .is_none_or(|d| matches!(d.state, JobState::Dead | JobState::Cancelled));
        (policy == DepPolicy::Completed && failed).then_some(dep)
    })
}

/// The jobs of workflow `id` (by id) with their step names.
fn workflow_members(
    schema: &crate::tables::Schema,
    id: WorkflowId,
) -> impl Iterator<Item = (JobId, &str)> + '_ {
    schema
        .workflow_jobs
        .range((id, JobId(Uuid::nil()))..=(id, JobId(Uuid::max())))
        .map(|((_, job), step)| (*job, step.as_str()))
}
