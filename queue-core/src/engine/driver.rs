//! [`Driver`]: what a SQL dialect provides to the engine. One method per statement (or per
//! short, fixed sequence of statements where the dialect needs one), each taking its values
//! and returning rows or a count. A driver decides nothing a user could observe: the engine
//! validates, decides, diagnoses, retries and wakes.

use std::ops::DerefMut;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::{BoxError, ConnectError, Error};
use crate::job::{Job, JobId, JobState, Lease, Leased, NewJob};
use crate::queue::{ListRequest, QueueControl, QueueStats};
use crate::wake::WakeHub;
use crate::workflow::{DepPolicy, Dependency, WorkflowId};

/// `d` in whole microseconds, the unit every dialect binds durations in; saturating (every
/// duration reaching SQL is validated far below the limit).
pub fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Where a statement runs: on the driver's own connections (autocommit, or a transaction of
/// the driver's making), or inside a transaction the caller opened on `C`.
#[derive(Debug)]
pub enum Target<'a, C: ?Sized> {
    /// The driver's pool.
    Pool,
    /// The caller's transaction, on its connection.
    Tx(&'a mut C),
}

impl<C: ?Sized> Target<'_, C> {
    /// Whether this is the caller's transaction.
    pub fn is_tx(&self) -> bool {
        matches!(self, Target::Tx(_))
    }

    /// The same target for one more statement.
    pub fn reborrow(&mut self) -> Target<'_, C> {
        match self {
            Target::Pool => Target::Pool,
            Target::Tx(conn) => Target::Tx(&mut **conn),
        }
    }
}

/// What a driver error means to the engine: the one classification a driver makes, from its
/// error codes and kinds (never from message text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverFault {
    /// The database could not be reached, went away, or refuses work for now (connection
    /// errors, pool timeouts, server shutting down, too many connections, busy file).
    Unavailable,
    /// A deadlock, lock wait timeout or serialization failure: the statement (or the driver's
    /// own transaction) was rolled back and the whole operation may be tried again.
    LockConflict,
    /// A unique index rejected a row.
    UniqueViolation(UniqueIndex),
    /// Anything else.
    Other,
}

impl DriverFault {
    /// The queue's error for a driver error `e` of this kind: [`Error::Unavailable`] for an
    /// unavailable database, [`Error::Conflict`] for a lock conflict, [`Error::Database`]
    /// otherwise (callers that can say more, such as naming a duplicate dedup key, do so
    /// before falling back to this).
    pub fn error(self, e: impl Into<BoxError>) -> Error {
        match self {
            DriverFault::Unavailable => Error::unavailable(e),
            DriverFault::LockConflict => Error::conflict(e),
            _ => Error::database(e),
        }
    }
}

/// A server's first connection, made directly rather than through a pool: a server that cannot
/// be reached is reported as [`Error::Unavailable`] naming its address and the driver's reason
/// (refused, unknown host, ...), not as a pool that timed out. `what` names the server
/// (`PostgreSQL`), `attempt` connects and reads what the builder needs to know.
///
/// # Errors
/// [`Error::Unavailable`] with a [`ConnectError`] when the server cannot be reached within
/// `timeout`; otherwise as `classify` says.
pub async fn first_contact<T, E, F>(
    what: &'static str,
    address: String,
    timeout: Duration,
    attempt: F,
    classify: impl Fn(&E) -> DriverFault,
) -> crate::Result<T>
where
    F: std::future::Future<Output = Result<T, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => match classify(&e) {
            DriverFault::Unavailable => {
                Err(Error::unavailable(ConnectError::new(what, address, e)))
            }
            fault => Err(fault.error(e)),
        },
        Err(_) => Err(Error::unavailable(ConnectError::new(
            what,
            address,
            format!("no answer within {timeout:?}"),
        ))),
    }
}

/// Which unique index a [`DriverFault::UniqueViolation`] names, as far as the driver can tell
/// from structured error fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UniqueIndex {
    /// The index that keeps dedup keys of live jobs apart.
    DedupKey,
    /// The index that keeps unique keys of jobs holding their place apart.
    UniqueKey,
    /// The primary key (a job id pushed twice).
    JobId,
    /// The workflows table's primary key (a workflow id pushed twice).
    WorkflowId,
    /// The server does not say which (MySQL and MariaDB report only a number): the engine
    /// finds out by looking for the clashing live dedup key.
    Unknown,
}

/// One embedded schema change of a dialect. Append only: an applied migration never changes.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// Its version; applied in ascending order, recorded once applied.
    pub version: i64,
    /// A short name for the bookkeeping table.
    pub name: &'static str,
    /// Its SQL (the driver splices its namespace in and splits statements as its dialect needs).
    pub sql: &'static str,
}

/// `job_insert`: store `jobs`, all or none (the engine wraps a call of several statements in a
/// transaction: see [`Driver::job_insert_statements`]).
#[derive(Clone, Copy, Debug)]
pub struct JobInsert<'a> {
    /// The validated jobs, in order.
    pub jobs: &'a [NewJob],
    /// For each job, how long after the database's now it becomes due.
    pub delays: &'a [Duration],
    /// Queues to wake in other processes when the insert commits (dialects with database
    /// notifications send them in the same statement or transaction; others ignore this).
    pub notify: &'a [&'a str],
}

/// `job_insert_unique`: store one job with a unique key, unless a job with the same key holds
/// its place (its state is in its own state set): the database's unique index decides, never a
/// read before the insert.
#[derive(Clone, Copy, Debug)]
pub struct JobInsertUnique<'a> {
    /// The validated job.
    pub job: &'a NewJob,
    /// How long after the database's now it becomes due.
    pub delay: Duration,
    /// Its unique key.
    pub key: &'a [u8; 32],
    /// The states in which it holds its place, as bits (see [`crate::unique::state_bit`]).
    pub states: i16,
}

/// What `job_insert_unique` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UniqueInsert {
    /// The job was stored.
    Inserted,
    /// A job with the same key holds its place: this one; nothing was stored.
    Held(JobId),
    /// The key was held when the insert ran, but no holder was found right after (it left its
    /// states meanwhile, or was not yet visible): nothing was stored; the engine tries again.
    Released,
}

/// `job_unique_replace`: the payload, priority and run time of the pending job `id` become the
/// new job's.
#[derive(Clone, Copy, Debug)]
pub struct JobUniqueReplace<'a> {
    /// The pending job that holds the key.
    pub id: JobId,
    /// The job whose payload and priority it takes.
    pub job: &'a NewJob,
    /// Its new run time: this long after the database's now.
    pub delay: Duration,
}

/// The rate limit stored in a queue's row (`rate_limit`, `rate_period_us`), `None` unless both
/// are set and in range.
pub fn rate_limit_of(limit: Option<i64>, period_us: Option<i64>) -> Option<crate::RateLimit> {
    let limit = u32::try_from(limit?).ok()?;
    let period = Duration::from_micros(u64::try_from(period_us?).ok()?);
    Some(crate::RateLimit { limit, period })
}

/// A queue's rate count as stored in its row, read with the database's clock
/// ([`Driver::queue_rate_state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateState {
    /// The window (microseconds since the Unix epoch divided by the period) that `count`
    /// belongs to; `None` before the first claim under the limit.
    pub window: Option<i64>,
    /// Jobs started in `window`.
    pub count: u32,
    /// The database's clock, in microseconds since the Unix epoch.
    pub now_us: i64,
}

/// `job_claim` / `job_candidates`: claim (or read candidates for) up to `limit` due pending jobs
/// of one queue, in claim order (priority descending, then `run_at`, then id).
#[derive(Clone, Copy, Debug)]
pub struct JobClaim<'a> {
    /// The queue.
    pub queue: &'a str,
    /// Most jobs.
    pub limit: usize,
    /// Lease duration, from the database's now.
    pub lease: Duration,
    /// The claiming worker, stored in the row.
    pub worker: &'a str,
    /// `job_claim` only: the caller holds the queue's control row (`queue_control_lock`) in
    /// this transaction and has applied its pause and limit, so the statement does not check
    /// them again. Otherwise every claim statement gives out nothing of a queue that is paused
    /// or limited (the engine then claims through the control row).
    pub controls_checked: bool,
}

/// `job_complete`: a fenced completion.
#[derive(Clone, Copy, Debug)]
pub struct JobComplete<'a> {
    /// The lease the completion is reported under.
    pub lease: &'a Lease,
    /// The handler's recorded output (JSON text, validated), stored in the same statement.
    pub output: Option<&'a str>,
    /// Whether the completed job stays in the table
    /// ([`CommonOptions::keep_completed`](super::CommonOptions::keep_completed)). With `false`
    /// the statement deletes it instead, fenced by its lease like the update, unless it is one
    /// that every dialect keeps all the same: a job of a workflow (its dependents read its
    /// state), a job whose uniqueness covers the completed state (the rule lasts until
    /// retention deletes it), a job completed with an output.
    pub keep: bool,
}

/// `job_fail_retry`: a fenced failure that sends the job back to pending.
///
/// Every failure (and every rescue) also appends `{"attempt", "at", "error", "worker"}` to the
/// job's `errors` list (a JSON array): `attempt` is the row's attempt count, `at` the database's
/// now in RFC 3339 (UTC), `error` the text stored in `last_error`, `worker` the row's worker; the
/// oldest entries are dropped so that at most `errors_kept` remain.
#[derive(Clone, Copy, Debug)]
pub struct JobFailRetry<'a> {
    /// The lease the failure is reported under.
    pub lease: &'a Lease,
    /// Due again this long after the database's now.
    pub delay: Duration,
    /// The error text to store (already bounded and made storable by the engine).
    pub error: &'a str,
    /// How many entries the error history keeps.
    pub errors_kept: u32,
}

/// `job_fail_dead`: a fenced failure that makes the job dead (history as in [`JobFailRetry`]).
#[derive(Clone, Copy, Debug)]
pub struct JobFailDead<'a> {
    /// The lease the failure is reported under.
    pub lease: &'a Lease,
    /// The error text to store.
    pub error: &'a str,
    /// How many entries the error history keeps.
    pub errors_kept: u32,
}

/// `job_snooze`: a fenced return to pending that gives the attempt back and counts a snooze,
/// only while the job has snoozed fewer than `max_snoozes` times.
#[derive(Clone, Copy, Debug)]
pub struct JobSnooze<'a> {
    /// The lease the snooze is asked under.
    pub lease: &'a Lease,
    /// Due again this long after the database's now.
    pub delay: Duration,
    /// The row changes only while its snooze count is below this.
    pub max_snoozes: u32,
}

/// A running job's metadata as `job_meta_get` reads it: the JSON text (or NULL) and the row's
/// version, which `job_meta_set` compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredMeta {
    /// The stored object, `None` when the column is NULL.
    pub meta: Option<String>,
    /// The row's version when it was read.
    pub version: i64,
}

/// `job_meta_set`: writes a running job's metadata, fenced by the lease and by the version read
/// with it (another merge, or a heartbeat, in between changes nothing).
#[derive(Clone, Copy, Debug)]
pub struct JobMetaSet<'a> {
    /// The lease the merge is made under.
    pub lease: &'a Lease,
    /// The version `job_meta_get` read.
    pub version: i64,
    /// The merged object (JSON text, validated).
    pub meta: &'a str,
}

/// `job_reschedule`: a pending job's run time and priority; what is `None` is kept.
#[derive(Clone, Copy, Debug)]
pub struct JobReschedule {
    /// The job.
    pub id: JobId,
    /// Due this long after the database's now.
    pub delay: Option<Duration>,
    /// The new priority.
    pub priority: Option<i32>,
}

/// A running job whose lease has expired, read by `job_expired`.
#[derive(Clone, Debug)]
pub struct Expired {
    /// The job.
    pub id: JobId,
    /// The lease token it still carries (fences the rescue).
    pub token: Uuid,
    /// Its queue (for wake-ups).
    pub queue: String,
    /// Attempts counted so far.
    pub attempts: u32,
    /// Its attempt budget.
    pub max_attempts: u32,
}

/// `job_rescue`: expired jobs, fenced by id, token and expiry, to pending (due now) or dead.
#[derive(Clone, Copy, Debug)]
pub struct JobRescue<'a> {
    /// `(id, lease token)` of each job.
    pub jobs: &'a [(JobId, Uuid)],
    /// Dead instead of pending.
    pub dead: bool,
    /// The error text to store (and to append to each job's history, as in [`JobFailRetry`]).
    pub error: &'a str,
    /// How many entries the error history keeps.
    pub errors_kept: u32,
}

/// `job_prune`: delete up to `limit` finished jobs.
#[derive(Clone, Copy, Debug)]
pub struct JobPrune<'a> {
    /// Only these states (all finished, no repeats).
    pub states: &'a [JobState],
    /// Only jobs that finished longer ago than this.
    pub older_than: Duration,
    /// Only this queue, or every queue.
    pub queue: Option<&'a str>,
    /// Most rows in this statement (the engine repeats until fewer are deleted).
    pub limit: usize,
}

/// `job_ids` / `job_count`: the jobs a bulk operation matches.
#[derive(Clone, Copy, Debug)]
pub struct JobMatch<'a> {
    /// Only this queue.
    pub queue: Option<&'a str>,
    /// Only these states (at least one, no repeats).
    pub states: &'a [JobState],
    /// Only this kind.
    pub kind: Option<&'a str>,
    /// Only jobs created longer ago than this, by the database's clock.
    pub older_than: Option<Duration>,
    /// `job_ids` only: only ids below this one (the next page, newest first).
    pub before: Option<JobId>,
    /// `job_ids` only: most rows.
    pub limit: usize,
}

// -------------------------------------------------------------------------------------------
// Periodic jobs (schedules): the values of the `schedule_*` statements.

/// A row of the `schedules` table, as every `schedule_*` statement reads and writes it. Plain
/// values: the engine interprets them (`crate::periodic`), the driver only binds and decodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSchedule {
    /// Its name (the primary key).
    pub name: String,
    /// The cron expression.
    pub expression: String,
    /// The IANA time zone.
    pub time_zone: String,
    /// The queue of its jobs.
    pub queue: String,
    /// The kind of its jobs (`None`: none).
    pub kind: Option<String>,
    /// The payload of its jobs, JSON text (stored as text, so it comes back byte for byte).
    pub payload: String,
    /// The priority of its jobs.
    pub priority: i32,
    /// The attempt budget of its jobs.
    pub max_attempts: i32,
    /// `skip` or `catch_up`.
    pub misfire: String,
    /// Most slots enqueued by one tick (1 for `skip`).
    pub misfire_max: i32,
    /// `code` or `operator`.
    pub origin: String,
    /// Slots at or before this are never enqueued.
    pub since: DateTime<Utc>,
    /// The last slot enqueued.
    pub last_slot: Option<DateTime<Utc>>,
    /// The job of the last slot.
    pub last_job: Option<JobId>,
    /// A code schedule's lease; NULL for an operator's.
    pub expires_at: Option<DateTime<Utc>>,
    /// Changes at every change of the row but a lease renewal; compare-and-set matches on it.
    pub version: i64,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// Read only (`schedule_list`, `schedule_get`): the state of the last slot's job, `None`
    /// when it has none or the job was pruned.
    pub last_job_state: Option<JobState>,
}

/// `schedule_advance`: the compare-and-set that claims a schedule's due slots, run in the same
/// transaction as the push of their jobs.
#[derive(Clone, Copy, Debug)]
pub struct ScheduleAdvance<'a> {
    /// The schedule.
    pub name: &'a str,
    /// The version that was read; the row is changed only if it still has it.
    pub version: i64,
    /// The latest slot enqueued now.
    pub last_slot: DateTime<Utc>,
    /// Its job.
    pub last_job: JobId,
    /// The scheduler's now (`updated_at`).
    pub now: DateTime<Utc>,
}

/// `workflow_insert`: a workflow's row.
#[derive(Clone, Copy, Debug)]
pub struct WorkflowInsert<'a> {
    /// Its id (the primary key: a second push of it is a unique violation,
    /// [`UniqueIndex::WorkflowId`]).
    pub id: WorkflowId,
    /// Its name.
    pub name: Option<&'a str>,
    /// An open batch: its callback waits until `workflow_seal`.
    pub open: bool,
    /// A batch's callback job.
    pub callback: Option<JobId>,
}

/// A workflow's row as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredWorkflow {
    /// Its id.
    pub id: WorkflowId,
    /// Its name.
    pub name: Option<String>,
    /// An open batch.
    pub open: bool,
    /// A batch's callback job.
    pub callback: Option<JobId>,
    /// When it was inserted (database clock).
    pub created_at: DateTime<Utc>,
}

/// One dependency of a workflow's job: `job` waits for `dep` as `policy` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkflowEdge {
    /// The job that waits.
    pub job: JobId,
    /// The job it waits for.
    pub dep: JobId,
    /// What it needs of it.
    pub policy: DepPolicy,
}

/// `workflow_prune_lock`: the next page of workflows retention looks at.
#[derive(Clone, Copy, Debug)]
pub struct WorkflowPruneLock {
    /// Only workflows created longer ago than this, by the database's clock (the rules'
    /// shortest age: a workflow's jobs finish after it was created).
    pub older_than: Duration,
    /// After this `(created_at, id)`: the last row of the previous page.
    pub after: Option<(DateTime<Utc>, WorkflowId)>,
    /// Most rows.
    pub limit: usize,
}

/// `workflow_prune`: the locked workflows to delete where every job of theirs allows it.
#[derive(Clone, Copy, Debug)]
pub struct WorkflowPrune<'a> {
    /// The workflows (locked by `workflow_prune_lock`).
    pub ids: &'a [WorkflowId],
    /// How long after finishing a completed job may go; `None`: completed jobs are kept.
    pub completed: Option<Duration>,
    /// The same for dead jobs.
    pub dead: Option<Duration>,
    /// The same for cancelled jobs.
    pub cancelled: Option<Duration>,
}

impl WorkflowPrune<'_> {
    /// The age of `state` (`None` for a state that is kept or not finished).
    pub fn age(&self, state: JobState) -> Option<Duration> {
        match state {
            JobState::Completed => self.completed,
            JobState::Dead => self.dead,
            JobState::Cancelled => self.cancelled,
            JobState::Waiting | JobState::Pending | JobState::Running => None,
        }
    }
}

/// What `workflow_prune` deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkflowPruned {
    /// Workflows (their rows, steps and dependencies).
    pub workflows: u64,
    /// Their jobs.
    pub jobs: u64,
}

/// The statements of one SQL dialect. Each method runs the statement of the same name in the
/// driver's `queries/` directory (plus the dialect's documented extra steps), binds every value,
/// decodes rows, and returns the driver's own error, which [`Driver::classify`] explains.
#[async_trait]
pub trait Driver: Send + Sync + 'static {
    /// The connection a caller's transaction runs on.
    type Conn: Send;
    /// The driver's error.
    type Error: std::error::Error + Send + Sync + 'static;
    /// A candidate read by the optimistic claim's first step, handed back to its second.
    type Candidate: Send + Sync + 'static;
    /// A migration session: holds the dialect's lock (and transaction) until it ends.
    type Migrator: Send;

    /// What an error means to the engine.
    fn classify(&self, error: &Self::Error) -> DriverFault;

    /// The dialect's migrations, oldest first.
    fn migrations(&self) -> &'static [Migration];

    /// `migration_lock` (+ `migration_table`): takes the dialect's migration lock (waiting for
    /// another process's migration to finish) and makes sure the bookkeeping table exists.
    async fn migration_lock(&self) -> Result<Self::Migrator, Self::Error>;

    /// `migration_applied`: the versions recorded so far.
    async fn migration_applied(&self, m: &mut Self::Migrator) -> Result<Vec<i64>, Self::Error>;

    /// Applies `migration` and `migration_record`s it.
    async fn migration_apply(
        &self,
        m: &mut Self::Migrator,
        migration: &Migration,
    ) -> Result<(), Self::Error>;

    /// `migration_unlock`: ends the session, committing when `commit` (else rolling back where
    /// the dialect's DDL is transactional).
    async fn migration_unlock(&self, m: Self::Migrator, commit: bool) -> Result<(), Self::Error>;

    /// `now`: the database's clock.
    async fn now(&self) -> Result<DateTime<Utc>, Self::Error>;

    /// The clock of the host the engine runs on, against which instants the caller gives (a
    /// job's `run_at`, a unique job's period) are turned into delays that the database adds to
    /// its own clock. The system clock; a driver whose `now` is a clock the caller moves (the
    /// in-memory driver's manual clock) returns that clock here too.
    fn host_now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    /// `job_insert`: stores every job of `p`, with the statements
    /// [`Driver::job_insert_statements`] counts. One statement is atomic by itself; the engine
    /// runs a call of more than one inside a transaction, so that it stores all or none.
    async fn job_insert(
        &self,
        target: Target<'_, Self::Conn>,
        p: JobInsert<'_>,
    ) -> Result<(), Self::Error>;

    /// How many statements [`Driver::job_insert`] of `p` runs (the dialect's parameter and
    /// packet limits decide; one unless the driver says otherwise). When it is more than one,
    /// the engine runs the call inside a transaction of the driver's ([`Driver::tx_begin`]) for
    /// [`Target::Pool`], and inside a savepoint ([`Driver::savepoint`]) of the transaction it
    /// is given for [`Target::Tx`], so that a failed batch leaves none of its jobs in that
    /// transaction, and the transaction's own writes as they were.
    fn job_insert_statements(&self, p: JobInsert<'_>) -> usize {
        let _ = p;
        1
    }

    /// `job_insert_unique`: see [`JobInsertUnique`].
    async fn job_insert_unique(
        &self,
        target: Target<'_, Self::Conn>,
        p: JobInsertUnique<'_>,
    ) -> Result<UniqueInsert, Self::Error>;

    /// `job_unique_replace`: see [`JobUniqueReplace`]; rows changed (0 when the job is no
    /// longer pending).
    async fn job_unique_replace(
        &self,
        target: Target<'_, Self::Conn>,
        p: JobUniqueReplace<'_>,
    ) -> Result<u64, Self::Error>;

    /// `job_unique_holder`: another job with the unique key of job `id` that holds its place
    /// (for the error of a retry that clashed).
    async fn job_unique_holder(&self, id: JobId) -> Result<Option<JobId>, Self::Error>;

    /// `job_dedup_live`: the `(queue, dedup key)` pairs of live (pending or running) jobs whose
    /// queue is one of `queues` and whose key is one of `keys`.
    async fn job_dedup_live(
        &self,
        target: Target<'_, Self::Conn>,
        queues: &[&str],
        keys: &[&str],
    ) -> Result<Vec<(String, String)>, Self::Error>;

    /// `job_claim`: claims atomically, skipping rows other claimers hold (or under the
    /// database's write lock), each claimed row with a new lease token.
    async fn job_claim(&self, p: JobClaim<'_>) -> Result<Vec<Leased>, Self::Error>;

    /// `job_claim` on the connection of a transaction of the driver's (`tx_begin`), which holds
    /// the queue's control row; `p.controls_checked` is set.
    async fn job_claim_in(
        &self,
        conn: &mut Self::Conn,
        p: JobClaim<'_>,
    ) -> Result<Vec<Leased>, Self::Error>;

    /// `job_candidates`: the optimistic claim's read, without locks.
    async fn job_candidates(&self, p: JobClaim<'_>) -> Result<Vec<Self::Candidate>, Self::Error>;

    /// `job_claim_candidates`: the optimistic claim's write: claims each candidate only if it
    /// is still pending with the version that was read; returns the ones won.
    async fn job_claim_candidates(
        &self,
        p: JobClaim<'_>,
        candidates: Vec<Self::Candidate>,
    ) -> Result<Vec<Leased>, Self::Error>;

    /// `job_complete`: completes the job if its lease is current, storing `p.output`; rows
    /// changed (0 or 1).
    async fn job_complete(
        &self,
        target: Target<'_, Self::Conn>,
        p: JobComplete<'_>,
    ) -> Result<u64, Self::Error>;

    /// `job_complete_many`: completes every job whose lease is current (unless `keep`,
    /// deleting the ones [`JobComplete::keep`] describes); rows changed or deleted.
    async fn job_complete_many(&self, leases: &[Lease], keep: bool) -> Result<u64, Self::Error>;

    /// `job_complete_and_claim`: [`Driver::job_complete_many`] of `leases`, then
    /// [`Driver::job_claim`] of `p`, in one round trip or one transaction, all or nothing; the
    /// rows completed and the jobs claimed. `Ok(None)` (the default) means the dialect cannot
    /// do better than the two calls, which the engine then makes itself.
    async fn job_complete_and_claim(
        &self,
        leases: &[Lease],
        keep: bool,
        p: JobClaim<'_>,
    ) -> Result<Option<(u64, Vec<Leased>)>, Self::Error> {
        let _ = (leases, keep, p);
        Ok(None)
    }

    /// `job_fail_retry`: back to pending after `delay`, the error recorded; rows changed.
    async fn job_fail_retry(&self, p: JobFailRetry<'_>) -> Result<u64, Self::Error>;

    /// `job_fail_dead`: dead, the error recorded; rows changed.
    async fn job_fail_dead(&self, p: JobFailDead<'_>) -> Result<u64, Self::Error>;

    /// `job_snooze`: back to pending after `p.delay`, the attempt given back, the snooze counted
    /// (see [`JobSnooze`]); rows changed.
    async fn job_snooze(&self, p: JobSnooze<'_>) -> Result<u64, Self::Error>;

    /// `job_meta_get`: the metadata and version of the job if `lease` is current, else `None`.
    async fn job_meta_get(&self, lease: &Lease) -> Result<Option<StoredMeta>, Self::Error>;

    /// `job_meta_set`: see [`JobMetaSet`]; rows changed.
    async fn job_meta_set(&self, p: JobMetaSet<'_>) -> Result<u64, Self::Error>;

    /// `job_release`: back to pending, due now, the attempt given back; rows changed.
    async fn job_release(&self, lease: &Lease) -> Result<u64, Self::Error>;

    /// `job_extend`: the lease's expiry moved to `by` from the database's now; the new expiry,
    /// or `None` when the lease is not current.
    async fn job_extend(
        &self,
        lease: &Lease,
        by: Duration,
    ) -> Result<Option<DateTime<Utc>>, Self::Error>;

    /// `job_state`: the job's state, `None` when there is no such job. Inside a caller's
    /// transaction it reads the latest committed row whatever the isolation level.
    async fn job_state(
        &self,
        target: Target<'_, Self::Conn>,
        id: JobId,
    ) -> Result<Option<JobState>, Self::Error>;

    /// `job_expired`: up to `limit` running jobs whose lease expired.
    async fn job_expired(&self, limit: usize) -> Result<Vec<Expired>, Self::Error>;

    /// `job_rescue`: moves the listed jobs that are still running under the listed token with
    /// an expired lease; rows changed.
    async fn job_rescue(&self, p: JobRescue<'_>) -> Result<u64, Self::Error>;

    /// `job_cancel`: a pending or running job to cancelled, keeping its lease token so the
    /// holder learns of it; rows changed.
    async fn job_cancel(&self, id: JobId) -> Result<u64, Self::Error>;

    /// `job_retry`: in a transaction of the engine's, a dead or cancelled job back: a job
    /// outside workflows to pending, due now; a step of a workflow to waiting (the engine then
    /// settles it in the same transaction: pending once its dependencies allow). Attempts and
    /// snoozes reset, its error history kept, `blocked_by` and `finished_at` cleared. Its
    /// queue, or `None` when no dead or cancelled job has this id.
    async fn job_retry(
        &self,
        conn: &mut Self::Conn,
        id: JobId,
    ) -> Result<Option<String>, Self::Error>;

    /// `job_reschedule`: see [`JobReschedule`]; the job's queue when a pending job was changed,
    /// `None` when no pending job has this id.
    async fn job_reschedule(&self, p: JobReschedule) -> Result<Option<String>, Self::Error>;

    /// `job_get`: one job.
    async fn job_get(&self, id: JobId) -> Result<Option<Job>, Self::Error>;

    /// `job_list`: jobs newest first (by id), filtered as asked (queue, state, kind, cursor).
    async fn job_list(&self, req: &ListRequest) -> Result<Vec<Job>, Self::Error>;

    /// `job_stats`: counts per queue and state, queues in name order. Completed, dead and
    /// cancelled jobs are counted up to `cap` per queue and state (exactly when `None`), so
    /// that the statement need not read every finished row.
    async fn job_stats(
        &self,
        queue: Option<&str>,
        cap: Option<u64>,
    ) -> Result<Vec<QueueStats>, Self::Error>;

    /// `job_prune`: deletes up to `p.limit` finished jobs outside workflows (a workflow's
    /// jobs go together, by `workflow_prune`); rows deleted.
    async fn job_prune(&self, p: JobPrune<'_>) -> Result<u64, Self::Error>;

    /// `job_ids`: the ids and queues of up to `m.limit` jobs that `m` matches, newest first
    /// (by id), below `m.before` when given.
    async fn job_ids(&self, m: JobMatch<'_>) -> Result<Vec<(JobId, String)>, Self::Error>;

    /// `job_count`: how many jobs `m` matches (`before` and `limit` ignored).
    async fn job_count(&self, m: JobMatch<'_>) -> Result<u64, Self::Error>;

    /// `job_cancel_many`: as `job_cancel`, for each of `ids` that is pending or running; rows
    /// changed.
    async fn job_cancel_many(&self, ids: &[JobId]) -> Result<u64, Self::Error>;

    /// `job_retry_many`: as `job_retry`, for each of `ids` that is dead or cancelled, in one
    /// statement (which fails as a whole on a unique violation); rows changed.
    async fn job_retry_many(
        &self,
        conn: &mut Self::Conn,
        ids: &[JobId],
    ) -> Result<u64, Self::Error>;

    /// `job_workflows`: the workflows the jobs of `ids` are steps of, each once, in id order
    /// (a job's workflow never changes, so this reads without locks).
    async fn job_workflows(&self, ids: &[JobId]) -> Result<Vec<WorkflowId>, Self::Error>;

    /// `job_dependents_count`: how many waiting jobs have a dependency of policy `Completed`
    /// among the jobs `m` matches (`before` and `limit` ignored): the jobs a cancel or delete
    /// of those would cancel first. Read from the waiting jobs' side (their index), so it
    /// costs little where few jobs wait.
    async fn job_dependents_count(&self, m: JobMatch<'_>) -> Result<u64, Self::Error>;

    /// `job_delete_many`: deletes each of `ids` whose state is one of `states`; rows deleted.
    async fn job_delete_many(&self, ids: &[JobId], states: &[JobState])
        -> Result<u64, Self::Error>;

    /// `maintenance_claim`: takes the lease row of maintenance task `task` for `lease` under
    /// `token` when its next run is due (the row's `next_at` has passed, so no lease runs), or
    /// renews it when `token` holds it already; whether it was taken. Retention takes a new
    /// token each round; the gauge sampler keeps one. The migrations create the rows
    /// (`retention`, `gauges`).
    async fn maintenance_claim(
        &self,
        task: &str,
        token: Uuid,
        lease: Duration,
    ) -> Result<bool, Self::Error>;

    /// `maintenance_release`: the task's round under `token` is over; its next run is due
    /// `next_in` from now.
    async fn maintenance_release(
        &self,
        task: &str,
        token: Uuid,
        next_in: Duration,
    ) -> Result<(), Self::Error>;

    /// `notify`: wakes workers of `queues` in other processes, where the dialect has database
    /// notifications ([`crate::Wakeups::ListenNotify`]); a no-op elsewhere.
    async fn notify(&self, queues: &[&str]) -> Result<(), Self::Error> {
        let _ = queues;
        Ok(())
    }

    /// Starts (once) whatever delivers other processes' notifications for `queue` into `hub`;
    /// a no-op where the dialect has none.
    fn watch(&self, queue: &str, hub: &Arc<WakeHub>) {
        let _ = (queue, hub);
    }

    // ---------------------------------------------------------------------------------------
    // Periodic jobs (schedules). A slot is claimed by `schedule_advance` and its jobs pushed by
    // `job_insert`, both inside one transaction of the driver's (`tx_begin` .. `tx_commit`).

    /// A transaction of the driver's own, in which the engine runs several statements that
    /// must commit together (a schedule's compare-and-set and the push of its slot's jobs).
    type Tx: Send;

    /// Begins a transaction at the driver's usual isolation (READ COMMITTED where the server
    /// has levels; SQLite's `BEGIN IMMEDIATE`).
    async fn tx_begin(&self) -> Result<Self::Tx, Self::Error>;

    /// The connection `tx` runs on, for statements taking a [`Target::Tx`].
    fn tx_conn(tx: &mut Self::Tx) -> &mut Self::Conn;

    /// Commits `tx`.
    async fn tx_commit(&self, tx: Self::Tx) -> Result<(), Self::Error>;

    /// Rolls `tx` back.
    async fn tx_rollback(&self, tx: Self::Tx) -> Result<(), Self::Error>;

    /// A savepoint in a transaction on [`Driver::Conn`] (the caller's, or one of the driver's
    /// own). The engine sets one around a call of several statements inside such a transaction
    /// (see [`Driver::job_insert_statements`]) and runs them on the connection it derefs to,
    /// then ends it with [`Driver::savepoint_release`] or [`Driver::savepoint_rollback`]. What
    /// one dropped without either does (a call cancelled halfway) is the dialect's: sqlx's
    /// transactions roll back to it at the connection's next use.
    type Savepoint<'c>: DerefMut<Target = Self::Conn> + Send
    where
        Self: 'c;

    /// Sets a savepoint in the transaction on `conn`.
    async fn savepoint<'c>(
        &self,
        conn: &'c mut Self::Conn,
    ) -> Result<Self::Savepoint<'c>, Self::Error>;

    /// Keeps what ran since `savepoint` was set, as part of its transaction.
    async fn savepoint_release(&self, savepoint: Self::Savepoint<'_>) -> Result<(), Self::Error>;

    /// Undoes what ran since `savepoint` was set, keeping its transaction open with what ran
    /// in it before.
    async fn savepoint_rollback(&self, savepoint: Self::Savepoint<'_>) -> Result<(), Self::Error>;

    // ---------------------------------------------------------------------------------------
    // Queue controls: one row per queue in the `queues` table, read by every claim statement
    // (which gives out nothing of a paused or limited queue) and locked by the engine's
    // controlled claim, which counts live leases and claims inside one transaction.

    /// `queue_control_get`: the controls of `queue`, `None` when it has no row.
    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>, Self::Error>;

    /// `queue_control_lock`: the controls of `queue`, read with a lock that every other
    /// `queue_control_lock` of the same queue waits for until this transaction ends (SQLite:
    /// the transaction's write lock is that lock).
    async fn queue_control_lock(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
    ) -> Result<Option<QueueControl>, Self::Error>;

    /// `queue_control_list`: every row of the `queues` table, by name.
    async fn queue_control_list(&self) -> Result<Vec<QueueControl>, Self::Error>;

    /// `queue_set_paused`: creates the row of `queue` when missing and sets `paused`.
    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<(), Self::Error>;

    /// `queue_set_limit`: creates the row of `queue` when missing and sets its limit.
    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), Self::Error>;

    /// `queue_set_rate`: creates the row of `queue` when missing, sets its rate limit (`Some`:
    /// starts per window and the window in microseconds) or removes it, and starts its count
    /// afresh (no window recorded).
    async fn queue_set_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), Self::Error>;

    /// `queue_rate_state`: inside the controlled claim's transaction, after
    /// `queue_control_lock`: the window the queue's rate count belongs to (`None`: none yet)
    /// and that count, with the database's clock now.
    async fn queue_rate_state(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
    ) -> Result<RateState, Self::Error>;

    /// `queue_rate_record`: sets the queue's rate window and its count of starts.
    async fn queue_rate_record(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
        window: i64,
        count: u32,
    ) -> Result<(), Self::Error>;

    /// `queue_set_key_limit`: creates the row of `queue` when missing and sets its key limit.
    async fn queue_set_key_limit(&self, queue: &str, limit: Option<u32>)
        -> Result<(), Self::Error>;

    /// `queue_set_key_rate`: creates the row of `queue` when missing, sets its key rate limit
    /// (`Some`: starts per window and the window in microseconds) or removes it, and forgets
    /// the counts of its keys.
    async fn queue_set_key_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), Self::Error>;

    /// `queue_key_rate_get`: inside the keyed claim's transaction: the window the count of
    /// `key`'s starts belongs to and that count (`None`: none recorded).
    async fn queue_key_rate_get(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>, Self::Error>;

    /// `queue_key_rate_put`: records `count` starts of `key` in `window` (creating its row).
    async fn queue_key_rate_put(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
        key: &str,
        window: i64,
        count: u32,
    ) -> Result<(), Self::Error>;

    /// `queue_set_fair`: creates the row of `queue` when missing and turns fair shares on or off.
    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<(), Self::Error>;

    /// `queue_key_cursor`: inside the controlled claim's transaction: records the key served
    /// last (`None`: the jobs without a key).
    async fn queue_key_cursor(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<(), Self::Error>;

    /// `job_key_leases`: for each concurrency key of `queue` with jobs running under an
    /// unexpired lease (by the database's clock, as of this statement), how many; the keys with
    /// the most first. Jobs without a key are left out.
    /// Inside the keyed claim's transaction (`Target::Tx`), or on the pool for `stats`
    /// (SQLite: its reader, so stats never wait for the write lock).
    async fn job_key_leases(
        &self,
        target: Target<'_, Self::Conn>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>, Self::Error>;

    /// `job_key_next`: the `n` smallest concurrency keys above `after` (byte order) that
    /// pending jobs of `queue` have, due or not, in order; fewer past the last.
    async fn job_key_next(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
        after: &str,
        n: usize,
    ) -> Result<Vec<String>, Self::Error>;

    /// `job_claim_key` / `job_claim_unkeyed`: claims up to `p.limit` due pending jobs of
    /// `p.queue` whose concurrency key is `key` (`None`: jobs without a key), in claim order,
    /// as `job_claim_in` with `controls_checked`.
    async fn job_claim_key(
        &self,
        conn: &mut Self::Conn,
        p: JobClaim<'_>,
        key: Option<&str>,
    ) -> Result<Vec<Leased>, Self::Error>;

    /// `job_claim_keys`: `job_claim_key` for several keys at once, up to `n` jobs of each
    /// `(key, n)` of `keys`; the jobs of each key in the place of its key. A dialect with a
    /// round trip per statement claims them together; the default runs `job_claim_key` for
    /// each key in turn (SQLite, in-process).
    async fn job_claim_keys(
        &self,
        conn: &mut Self::Conn,
        p: JobClaim<'_>,
        keys: &[(String, usize)],
    ) -> Result<Vec<Vec<Leased>>, Self::Error> {
        let mut out = Vec::with_capacity(keys.len());
        for (key, n) in keys {
            out.push(
                self.job_claim_key(conn, JobClaim { limit: *n, ..p }, Some(key))
                    .await?,
            );
        }
        Ok(out)
    }

    /// `queue_key_rate_prune`: deletes up to `limit` of `queue`'s key rate counts whose window
    /// is before `before` (for retention), and says how many.
    async fn queue_key_rate_prune(
        &self,
        queue: &str,
        before: i64,
        limit: usize,
    ) -> Result<u64, Self::Error>;

    /// `job_key_waiting`: how many pending jobs of `queue` with concurrency key `key` are due.
    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64, Self::Error>;

    /// `job_live_leases`: how many jobs of `queue` are running with an unexpired lease, by the
    /// database's clock, as of this statement (a new snapshot after `queue_control_lock`).
    async fn job_live_leases(&self, conn: &mut Self::Conn, queue: &str)
        -> Result<u64, Self::Error>;

    /// `schedule_get`: one schedule (with its last job's state), `None` when there is none.
    async fn schedule_get(&self, name: &str) -> Result<Option<StoredSchedule>, Self::Error>;

    /// `schedule_list`: every schedule (with its last job's state), by name.
    async fn schedule_list(&self) -> Result<Vec<StoredSchedule>, Self::Error>;

    /// `schedule_insert`: a new schedule; a unique violation when the name exists.
    async fn schedule_insert(&self, s: &StoredSchedule) -> Result<(), Self::Error>;

    /// `schedule_update`: writes every column of `s` (but `created_at`) if the row still has
    /// `version`; rows changed.
    async fn schedule_update(&self, s: &StoredSchedule, version: i64) -> Result<u64, Self::Error>;

    /// `schedule_touch`: extends the lease of the code schedule `name` to `expires_at` (never
    /// shortening it), leaving its version alone; rows changed.
    async fn schedule_touch(
        &self,
        name: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<u64, Self::Error>;

    /// `schedule_advance`: the slot compare-and-set (see [`ScheduleAdvance`]); rows changed.
    async fn schedule_advance(
        &self,
        target: Target<'_, Self::Conn>,
        p: ScheduleAdvance<'_>,
    ) -> Result<u64, Self::Error>;

    /// `schedule_delete`: deletes `name` if it still has `version`; rows deleted.
    async fn schedule_delete(&self, name: &str, version: i64) -> Result<u64, Self::Error>;

    // ---------------------------------------------------------------------------------------
    // Workflows. A workflow is a row of the `workflows` table, its jobs (inserted by
    // `job_insert`, each carrying its `workflow_id`, waiting when it has dependencies), one row
    // per job in `workflow_jobs` (workflow, job, step name) and one per dependency in
    // `job_deps` (dependency, job, policy). The engine inserts them in one transaction (the
    // driver's or the caller's), and after a workflow job finishes it settles the jobs waiting
    // for it (`workflow_dependents`, `workflow_block`, `workflow_promote`), each statement
    // deciding from committed states only, so that whichever finisher commits last promotes.

    /// `workflow_insert`: the workflow's row, `created_at` the database's now.
    async fn workflow_insert(
        &self,
        conn: &mut Self::Conn,
        w: WorkflowInsert<'_>,
    ) -> Result<(), Self::Error>;

    /// `workflow_steps_insert`: one `workflow_jobs` row per `(job, step)` of `workflow`.
    async fn workflow_steps_insert(
        &self,
        conn: &mut Self::Conn,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<(), Self::Error>;

    /// `workflow_deps_insert`: one `job_deps` row per edge.
    async fn workflow_deps_insert(
        &self,
        conn: &mut Self::Conn,
        edges: &[WorkflowEdge],
    ) -> Result<(), Self::Error>;

    /// `workflow_lock`: the workflow's row, locked until the transaction ends (`SELECT ... FOR
    /// UPDATE`, `UPDLOCK`; SQLite: the transaction's write lock), `None` when there is none.
    async fn workflow_lock(
        &self,
        conn: &mut Self::Conn,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>, Self::Error>;

    /// `workflow_seal`: an open workflow closed (`open` false); rows changed.
    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64, Self::Error>;

    /// `workflow_dependents`: the waiting jobs that depend on any of `finished`.
    async fn workflow_dependents(
        &self,
        target: Target<'_, Self::Conn>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>, Self::Error>;

    /// `workflow_block`: each of `waiting` that is still waiting and has a dependency of
    /// policy `Completed` that is dead, cancelled or no longer exists (deleted) becomes
    /// cancelled (`finished_at` and `updated_at` now, `version` + 1), `blocked_by` that
    /// dependency (the least id of such); the jobs cancelled. Decided from committed states,
    /// and the rows of dead or cancelled dependencies it decides from are read with a lock
    /// that a retry of them waits for (or that waits for a retry of them to commit, and then
    /// sees it), so that a retry always finds, and reopens, what this cancels.
    async fn workflow_block(
        &self,
        target: Target<'_, Self::Conn>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>, Self::Error>;

    /// `workflow_promote`: each of `waiting` that is still waiting, whose every dependency is
    /// resolved (policy `Completed`: completed; `AnyOutcome`: completed, dead, cancelled or
    /// deleted; a deleted dependency of policy `Completed` is never resolved: `workflow_block`
    /// cancels its dependents) and that is not the callback of an
    /// open workflow, becomes pending, due at the later of its `run_at` and now (`updated_at`
    /// now, `version` + 1); the jobs promoted, with their queues. Decided from committed
    /// states only.
    async fn workflow_promote(
        &self,
        target: Target<'_, Self::Conn>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>, Self::Error>;

    /// `workflow_reopen`: in the retry's transaction, the cancelled jobs whose `blocked_by` is
    /// one of `retried` become waiting again (`blocked_by` and `finished_at` NULL, `updated_at`
    /// now, `version` + 1); the jobs reopened.
    async fn workflow_reopen(
        &self,
        conn: &mut Self::Conn,
        retried: &[JobId],
    ) -> Result<Vec<JobId>, Self::Error>;

    /// `workflow_blocked`: in the retry's transaction, after `workflow_lock` of their
    /// workflows: of `ids`, the jobs that have a dependency of policy `Completed` that is dead,
    /// cancelled or deleted, each with the least such dependency (what a retry of them would
    /// wait for in vain).
    async fn workflow_blocked(
        &self,
        conn: &mut Self::Conn,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>, Self::Error>;

    /// `workflow_waiting`: up to `limit` waiting jobs in id order, after `after` when given
    /// (the sweep that settles what a crash left unsettled).
    async fn workflow_waiting(
        &self,
        after: Option<JobId>,
        limit: usize,
    ) -> Result<Vec<JobId>, Self::Error>;

    /// `workflow_get`: the workflow's row.
    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>, Self::Error>;

    /// `workflow_jobs`: the workflow's jobs in id order, each with its step name (`Job::step`
    /// set; the columns of `job_list`).
    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>, Self::Error>;

    /// `workflow_edges`: the dependencies of the workflow's jobs.
    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>, Self::Error>;

    /// `workflow_list`: up to `limit` workflows, newest first (by id), below `before` when
    /// given, each with how many of its jobs are in each state.
    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>, Self::Error>;

    /// `workflow_prune_lock`: in a transaction of the driver's, the first step of retention's
    /// deletion of whole workflows: up to `p.limit` workflows created longer than
    /// `p.older_than` ago (database clock), after `p.after` in `(created_at, id)` order, in
    /// that order, locked as `workflow_lock` locks them, skipping the rows another transaction
    /// holds (a retry or a `batch_add` of that workflow: it is looked at again next round).
    /// Read along the index of `(created_at, id)`, never the whole table.
    async fn workflow_prune_lock(
        &self,
        conn: &mut Self::Conn,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>, Self::Error>;

    /// `workflow_prune`: in the same transaction, after `workflow_prune_lock` (a statement of
    /// its own, so that what it reads is committed after the locks were taken): deletes each
    /// workflow of `p.ids` every one of whose jobs is finished, and finished longer ago than
    /// its state's age (a state without an age is kept, and keeps its workflow), with all of
    /// its jobs, their `workflow_jobs` and `job_deps` rows, and the workflow's row. A workflow
    /// none of whose jobs exists any more goes too. Each workflow's jobs are read through
    /// `workflow_jobs`' primary key and the jobs table's, never by a scan.
    async fn workflow_prune(
        &self,
        conn: &mut Self::Conn,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned, Self::Error>;

    /// `job_deps`: what job `id` depends on, each with its step, policy, and its job's state
    /// and output (`None` when that job no longer exists), in the dependencies' id order.
    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>, Self::Error>;
}
