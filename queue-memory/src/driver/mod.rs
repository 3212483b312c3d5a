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

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use queue_core::engine::{
    micros, Completion, JobClaim, JobInsert, JobMatch, StoredSchedule, Target,
};
use queue_core::{AttemptError, DepPolicy, JobId, JobState, Lease, Leased, NewJob, WorkflowId};
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::error::MemoryError;
use crate::faults::{Call, Faults, Statement};
use crate::jobs::{ClaimOrder, JobRow};
use crate::store::{driver_id, statement, MemoryTx, Store};
use crate::tables::{QueueRow, Tables, Writer};

mod claim;
mod controls;
mod lifecycle;
mod maintenance;
mod operators;
mod push;
mod running;
mod schedules;
mod workflows;

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
    let expires =
        Lease::expiry(now, p.lease).ok_or(MemoryError::TimeOutOfRange("the lease's expiry"))?;
    let mut claimed = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(mut row) = in_state(w, id, &[JobState::Pending])? else {
            continue;
        };
        row.state = JobState::Running;
        row.attempts = row.attempts.saturating_add(1);
        row.lease_token = Some(Lease::new_token());
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
/// with [`Completion::Delete`], deletes the ones nothing needs instead (see [`deletable`]).
fn complete_many(
    w: &mut Writer<'_>,
    leases: &[Lease],
    completion: Completion,
    now: DateTime<Utc>,
) -> Result<u64> {
    let mut done = 0;
    for lease in leases {
        let Some(row) = fenced(w, lease)? else {
            continue;
        };
        complete_row(w, row, None, completion, now)?;
        done += 1;
    }
    Ok(done)
}

/// Whether a [`Completion::Delete`] deletes `row`: not when the row is needed (an output stored
/// before, a step of a workflow, a uniqueness over the completed state, bit 4), as the SQL
/// dialects' statements check.
fn deletable(row: &JobRow) -> bool {
    row.output.is_none()
        && row.workflow.is_none()
        && row.unique.is_none_or(|(_, states)| states & 4 == 0)
}

/// Completes the fenced `row` (its output stored when given), or deletes it (with
/// [`Completion::Delete`], when nothing needs it).
fn complete_row(
    w: &mut Writer<'_>,
    mut row: JobRow,
    output: Option<&str>,
    completion: Completion,
    now: DateTime<Utc>,
) -> Result<()> {
    if completion.deletes() && deletable(&row) {
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
