//! The `Queue` trait every backend implements, and the values it takes and returns.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::job::{
    FailOutcome, Failure, Job, JobId, JobState, Lease, Leased, NewJob, Reschedule, Snooze,
    SnoozeOutcome,
};
use crate::periodic::{PeriodicJob, Registered, Registration, ScheduleInfo, TickReport};
use crate::profile::EngineProfile;
use crate::retention::{Retention, RetentionReport};
use crate::unique::PushOutcome;
use crate::validate::{self, Limits};

/// Which SQL dialect a backend speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// SQLite 3.35+ (embedded).
    Sqlite,
    /// PostgreSQL 13+.
    Postgres,
    /// MySQL 8.0+ (or 5.7 with the optimistic claim).
    MySql,
    /// MariaDB 10.6+ (or older with the optimistic claim).
    MariaDb,
    /// Microsoft SQL Server.
    MsSql,
    /// No SQL: jobs kept in this process's memory (`dbqueue-memory`), for tests and as the
    /// reference driver.
    Memory,
}

/// How `pop` makes its claim atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClaimStrategy {
    /// Row locks that concurrent claimers skip (`FOR UPDATE SKIP LOCKED`, `READPAST`).
    SkipLocked,
    /// One writer at a time holds the database's write lock (SQLite `BEGIN IMMEDIATE`).
    WriteLock,
    /// Read candidates, then claim each with an update guarded by its version; one row changed
    /// means claimed. Works on any server, including those without `SKIP LOCKED`.
    Optimistic,
}

impl ClaimStrategy {
    /// A short lowercase name (`skip_locked`, `write_lock`, `optimistic`).
    pub fn as_str(&self) -> &'static str {
        match self {
            ClaimStrategy::SkipLocked => "skip_locked",
            ClaimStrategy::WriteLock => "write_lock",
            ClaimStrategy::Optimistic => "optimistic",
        }
    }
}

/// How workers learn that new work arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Wakeups {
    /// Pushes through this queue value wake its waiting workers; other processes are seen by
    /// polling.
    InProcess,
    /// The database delivers notifications across processes (PostgreSQL LISTEN/NOTIFY), with
    /// in-process wake-ups and polling as fallbacks.
    ListenNotify,
}

/// What a backend can do, as data, so callers and tests branch on capabilities rather than on
/// backend names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// The SQL dialect.
    pub dialect: Dialect,
    /// How `pop` claims.
    pub claim: ClaimStrategy,
    /// How workers are woken.
    pub wakeups: Wakeups,
    /// The finest timestamp resolution the backend stores.
    pub time_precision: Duration,
    /// Whether the backend offers push and complete inside the caller's own transaction.
    pub transactions: bool,
    /// The server's version string, when there is a server.
    pub server_version: Option<String>,
    /// The engine behind the dialect and what it can do (detected at connect, or overridden).
    pub profile: EngineProfile,
    /// The size limits in force.
    pub limits: Limits,
}

/// A request to claim jobs.
#[derive(Clone, Debug)]
pub struct PopRequest {
    /// The queue to claim from.
    pub queue: String,
    /// Most jobs to claim.
    pub limit: usize,
    /// How long the claim lasts unless extended.
    pub lease: Duration,
    /// Who is claiming (stored in the row for operators).
    pub worker: String,
}

impl PopRequest {
    /// Claim one job from `queue` with a 30 s lease.
    pub fn new(queue: impl Into<String>) -> Self {
        PopRequest {
            queue: queue.into(),
            limit: 1,
            lease: Duration::from_secs(30),
            worker: default_worker_id(),
        }
    }

    /// Claim up to `limit` jobs.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Lease them for `lease`.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Record `worker` as the claimer.
    pub fn worker(mut self, worker: impl Into<String>) -> Self {
        self.worker = worker.into();
        self
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        validate::queue_name(&self.queue)?;
        validate::pop_limit(self.limit, limits)?;
        validate::lease("lease", self.lease)?;
        validate::worker_id(&self.worker)
    }
}

/// A [`PopRequest`] that passed validation, so a worker that claims again and again checks its
/// request once. Only [`CheckedPop::new`] and [`CheckedPop::with_limit`] make one.
#[derive(Clone, Debug)]
pub struct CheckedPop {
    req: PopRequest,
}

impl CheckedPop {
    /// Checks every field of `req` against `limits`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field.
    pub fn new(req: PopRequest, limits: &Limits) -> Result<Self> {
        req.validate(limits)?;
        Ok(CheckedPop { req })
    }

    /// The same request claiming up to `limit` jobs; only the limit is checked again.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `limit`.
    pub fn with_limit(&self, limit: usize, limits: &Limits) -> Result<Self> {
        validate::pop_limit(limit, limits)?;
        let mut req = self.req.clone();
        req.limit = limit;
        Ok(CheckedPop { req })
    }

    /// The request.
    pub fn request(&self) -> &PopRequest {
        &self.req
    }
}

/// `hostname:pid`, a reasonable default worker id.
pub fn default_worker_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
    format!("{host}:{}", std::process::id())
}

/// Job counts of one queue by state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// The queue.
    pub queue: String,
    /// Waiting for the jobs they depend on (steps of workflows).
    pub waiting: u64,
    /// Pending and due now.
    pub available: u64,
    /// Pending but not due yet (delayed or backing off).
    pub scheduled: u64,
    /// Running.
    pub running: u64,
    /// When the longest-waiting available job became due (`None`: no job is available). Its age
    /// is how far the queue's workers are behind, or how long a paused or limited queue has
    /// held its jobs back.
    pub oldest_due: Option<DateTime<Utc>>,
    /// Completed.
    pub completed: u64,
    /// Dead.
    pub dead: u64,
    /// Cancelled.
    pub cancelled: u64,
    /// Paused ([`Queue::pause`]): no job of it is given out until it is resumed.
    pub paused: bool,
    /// At most this many of its jobs hold a live lease at once
    /// ([`Queue::set_concurrency_limit`]).
    pub concurrency_limit: Option<u32>,
    /// At most this many of its jobs start per window ([`Queue::set_rate_limit`]).
    pub rate_limit: Option<RateLimit>,
    /// At most this many of its jobs with one concurrency key hold a live lease at once
    /// ([`Queue::set_key_limit`]).
    pub key_limit: Option<u32>,
    /// Claims take turns across its concurrency keys ([`Queue::set_fair_shares`]).
    pub fair_shares: bool,
    /// At most this many of its jobs with one concurrency key start per window
    /// ([`Queue::set_key_rate_limit`]).
    pub key_rate_limit: Option<RateLimit>,
    /// In a queue with a key limit or fair shares: the keys with the most live leases, most
    /// first (at most [`HOT_KEYS`]), each with how many of its jobs are due and waiting.
    pub hot_keys: Vec<HotKey>,
    /// Completed, dead and cancelled jobs were counted up to this many each
    /// ([`Limits::stats_count_cap`]): a count equal to it means at least that many
    /// ([`QueueStats::at_least`]). `None`: every count is exact.
    pub count_cap: Option<u64>,
}

/// The controls of one queue ([`Queue::pause`], [`Queue::set_concurrency_limit`]), as stored in
/// the `queues` table. A queue without a row is running and unlimited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueControl {
    /// The queue.
    pub queue: String,
    /// No job of it is given out.
    pub paused: bool,
    /// At most this many of its jobs hold a live lease at once, across every process.
    pub concurrency_limit: Option<u32>,
    /// At most this many of its jobs start per window, across every process.
    pub rate_limit: Option<RateLimit>,
    /// At most this many of its jobs with one concurrency key hold a live lease at once,
    /// across every process.
    pub key_limit: Option<u32>,
    /// Claims take turns across its concurrency keys.
    pub fair_shares: bool,
    /// At most this many of its jobs with one concurrency key start per window, across every
    /// process.
    pub key_rate_limit: Option<RateLimit>,
    /// Where the turns across keys resume: the key the latest claim served last (`None`: the
    /// jobs without a key, or no claim yet).
    pub key_cursor: Option<String>,
}

impl QueueControl {
    /// Whether claims of this queue need the controlled path (paused or limited).
    pub fn restricts(&self) -> bool {
        self.paused || self.concurrency_limit.is_some() || self.rate_limit.is_some() || self.keyed()
    }

    /// Whether claims of this queue go key by key (a key limit, a key rate limit or fair
    /// shares).
    pub fn keyed(&self) -> bool {
        self.key_limit.is_some() || self.key_rate_limit.is_some() || self.fair_shares
    }
}

/// How many hot keys [`QueueStats::hot_keys`] lists.
pub const HOT_KEYS: usize = 10;

/// A concurrency key with live leases ([`QueueStats::hot_keys`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HotKey {
    /// The key.
    pub key: String,
    /// Its jobs holding a live lease.
    pub running: u64,
    /// Its jobs pending and due: held back while `running` is at the key limit.
    pub waiting: u64,
}

/// A queue's rate limit ([`Queue::set_rate_limit`]): at most `limit` of its jobs start in each
/// window of length `period`, across every process.
///
/// Windows are fixed: they are the multiples of `period` since the Unix epoch, by the
/// database's clock (SQLite: this host's), and a job starts when it is claimed (the start of its
/// first lease of that attempt). Each window holds at most `limit` starts, exactly; the count
/// lives in the queue's row and is written in the claim's transaction, so a claim that fails
/// leaves it untouched. What fixed windows allow: after an idle period, `limit` jobs may start
/// at once, and the last `limit` starts of one window and the first `limit` of the next can
/// come within less than one `period` of each other. Retries, snoozes and rescued jobs start
/// again and count again. Setting a rate limit starts its count afresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Starts per window, from 1 to [`MAX_CONCURRENCY_LIMIT`].
    pub limit: u32,
    /// The window's length, from [`MIN_RATE_PERIOD`] to [`MAX_RATE_PERIOD`], in whole
    /// milliseconds.
    pub period: Duration,
}

/// The shortest window of a rate limit: shorter ones are finer than a claim's round trip.
pub const MIN_RATE_PERIOD: Duration = Duration::from_millis(10);

/// The longest window of a rate limit.
pub const MAX_RATE_PERIOD: Duration = Duration::from_secs(7 * 24 * 3600);

impl RateLimit {
    /// At most `limit` starts per `period`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `rate_limit.limit` (0, or more than
    /// [`MAX_CONCURRENCY_LIMIT`]) or `rate_limit.period` (shorter than [`MIN_RATE_PERIOD`],
    /// longer than [`MAX_RATE_PERIOD`], or not a whole number of milliseconds).
    pub fn new(limit: u32, period: Duration) -> Result<Self> {
        let rate = RateLimit { limit, period };
        rate.validate()?;
        Ok(rate)
    }

    /// Checks both fields (see [`RateLimit::new`]).
    ///
    /// # Errors
    /// As [`RateLimit::new`].
    pub fn validate(&self) -> Result<()> {
        if self.limit == 0 {
            return Err(Error::invalid(
                "rate_limit.limit",
                "must be at least 1 (pause the queue to stop it)",
            ));
        }
        if self.limit > MAX_CONCURRENCY_LIMIT {
            return Err(Error::invalid(
                "rate_limit.limit",
                format!(
                    "must be at most {MAX_CONCURRENCY_LIMIT} (got {})",
                    self.limit
                ),
            ));
        }
        if self.period < MIN_RATE_PERIOD || self.period > MAX_RATE_PERIOD {
            return Err(Error::invalid(
                "rate_limit.period",
                format!(
                    "must be from {} ms to {} days (got {:?})",
                    MIN_RATE_PERIOD.as_millis(),
                    MAX_RATE_PERIOD.as_secs() / 86_400,
                    self.period
                ),
            ));
        }
        if !self.period.subsec_nanos().is_multiple_of(1_000_000) {
            return Err(Error::invalid(
                "rate_limit.period",
                format!(
                    "must be a whole number of milliseconds (got {:?})",
                    self.period
                ),
            ));
        }
        Ok(())
    }

    /// The window's length in microseconds (what the database stores).
    pub fn period_us(&self) -> i64 {
        i64::try_from(self.period.as_micros()).unwrap_or(i64::MAX)
    }
}

/// The highest concurrency limit accepted: beyond it, a limit is a typo rather than a limit.
pub const MAX_CONCURRENCY_LIMIT: u32 = 1_000_000;

impl QueueStats {
    /// Whether the count of `state` stopped at the cap ([`QueueStats::count_cap`]): there are
    /// at least that many, perhaps more.
    pub fn at_least(&self, state: JobState) -> bool {
        state.is_finished() && self.count_cap.is_some_and(|cap| self.count(state) >= cap)
    }

    /// The count for `state` (pending is available + scheduled).
    pub fn count(&self, state: JobState) -> u64 {
        match state {
            JobState::Waiting => self.waiting,
            JobState::Pending => self.available + self.scheduled,
            JobState::Running => self.running,
            JobState::Completed => self.completed,
            JobState::Dead => self.dead,
            JobState::Cancelled => self.cancelled,
        }
    }
}

/// Which finished jobs `prune` deletes.
#[derive(Clone, Debug)]
pub struct PruneRequest {
    /// Only jobs that finished more than this long ago.
    pub older_than: Duration,
    /// Only jobs in these states; each must be finished.
    pub states: Vec<JobState>,
    /// Only this queue, or every queue.
    pub queue: Option<String>,
}

impl PruneRequest {
    /// Every finished job older than `older_than`, in every queue.
    pub fn older_than(older_than: Duration) -> Self {
        PruneRequest {
            older_than,
            states: JobState::FINISHED.to_vec(),
            queue: None,
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field.
    pub fn validate(&self) -> Result<()> {
        if let Some(q) = &self.queue {
            validate::queue_name(q)?;
        }
        if self.states.is_empty() {
            return Err(Error::invalid(
                "states",
                "must name at least one finished state",
            ));
        }
        if let Some(s) = self.states.iter().find(|s| !s.is_finished()) {
            return Err(Error::invalid(
                "states",
                format!("may name only finished states (completed, dead, cancelled), not {s}"),
            ));
        }
        validate::delay(self.older_than)
            .map_err(|_| Error::invalid("older_than", "must be at most 10 years"))
    }
}

/// Which jobs `list` returns, newest first (by id: ids are time-ordered UUID v7, so this is
/// the order of creation).
#[derive(Clone, Debug)]
pub struct ListRequest {
    /// Only this queue.
    pub queue: Option<String>,
    /// Only this state.
    pub state: Option<JobState>,
    /// Only jobs of this kind.
    pub kind: Option<String>,
    /// Most rows (1..=1000).
    pub limit: usize,
    /// Only jobs older than this one (their id sorts before it): the next page after a page
    /// that ended with this id. Paging by id reads an index instead of skipping rows.
    pub before: Option<JobId>,
}

impl Default for ListRequest {
    fn default() -> Self {
        ListRequest {
            queue: None,
            state: None,
            kind: None,
            limit: 100,
            before: None,
        }
    }
}

impl ListRequest {
    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field.
    pub fn validate(&self) -> Result<()> {
        if let Some(q) = &self.queue {
            validate::queue_name(q)?;
        }
        if let Some(k) = &self.kind {
            validate::kind(k)?;
        }
        if !(1..=1000).contains(&self.limit) {
            return Err(Error::invalid("limit", "must be between 1 and 1000"));
        }
        Ok(())
    }
}

/// What a bulk operation ([`Queue::bulk`]) does to each job its filter matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BulkAction {
    /// Pending and running jobs become cancelled (a running job's holder learns of it at its
    /// next transition, as with [`Queue::cancel`]).
    Cancel,
    /// Dead and cancelled jobs go back to pending, due now, as with [`Queue::retry`].
    Retry,
    /// Pending and finished jobs are deleted. Running jobs are not: cancel them first.
    Delete,
}

impl BulkAction {
    /// Every action.
    pub const ALL: [BulkAction; 3] = [BulkAction::Cancel, BulkAction::Retry, BulkAction::Delete];

    /// The states of the jobs it applies to.
    pub fn states(self) -> &'static [JobState] {
        match self {
            BulkAction::Cancel => &[JobState::Waiting, JobState::Pending, JobState::Running],
            BulkAction::Retry => &[JobState::Dead, JobState::Cancelled],
            BulkAction::Delete => &[
                JobState::Waiting,
                JobState::Pending,
                JobState::Completed,
                JobState::Dead,
                JobState::Cancelled,
            ],
        }
    }

    /// Its name: `cancel`, `retry` or `delete`.
    pub fn as_str(self) -> &'static str {
        match self {
            BulkAction::Cancel => "cancel",
            BulkAction::Retry => "retry",
            BulkAction::Delete => "delete",
        }
    }
}

impl fmt::Display for BulkAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for BulkAction {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        BulkAction::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| Error::invalid("action", "must be cancel, retry or delete"))
    }
}

/// Which jobs a bulk operation touches: each field that is set narrows it; the operation
/// itself narrows it to the states it applies to ([`BulkAction::states`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// Only this queue.
    pub queue: Option<String>,
    /// Only this state (one the operation applies to).
    pub state: Option<JobState>,
    /// Only jobs of this kind.
    pub kind: Option<String>,
    /// Only jobs created longer ago than this (by the database's clock).
    pub older_than: Option<Duration>,
}

impl JobFilter {
    /// Checks every field for `action` and returns the states it touches.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field: a bad queue or kind name, a state the action
    /// does not apply to, an age over 10 years.
    pub fn states_for(&self, action: BulkAction) -> Result<Vec<JobState>> {
        if let Some(q) = &self.queue {
            validate::queue_name(q)?;
        }
        if let Some(k) = &self.kind {
            validate::kind(k)?;
        }
        if let Some(age) = self.older_than {
            validate::delay(age)
                .map_err(|_| Error::invalid("older_than", "must be at most 10 years"))?;
        }
        let applies = action.states();
        match self.state {
            None => Ok(applies.to_vec()),
            Some(s) if applies.contains(&s) => Ok(vec![s]),
            Some(s) => Err(Error::invalid(
                "state",
                format!(
                    "{action} applies to {} jobs, not {s}",
                    applies
                        .iter()
                        .map(JobState::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }
}

/// What a bulk operation did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkOutcome {
    /// Jobs cancelled, retried or deleted.
    pub changed: u64,
    /// Jobs that matched but were left as they were: they changed state meanwhile, or (retry)
    /// a live job holds their dedup or unique key.
    pub skipped: u64,
}

/// A durable job queue stored in a relational database.
///
/// Every method validates its input before touching the database. Transitions of a running job
/// (`ack`, `fail`, `extend`, `release`) are fenced by the lease token: a holder whose lease was
/// lost gets [`Error::LeaseLost`] (or [`Error::Cancelled`]) and changes nothing.
#[async_trait]
pub trait Queue: Send + Sync + 'static {
    /// What this backend can do.
    fn capabilities(&self) -> &Capabilities;

    /// Creates or upgrades the schema. Idempotent, and safe when several processes run it at once.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    async fn migrate(&self) -> Result<()>;

    /// Stores one job and returns its id; a unique job ([`NewJob::unique`]) that meets a job
    /// holding its key stores nothing and returns that job's id ([`Queue::push_outcome`] says
    /// which happened).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad job; [`Error::Duplicate`] when a live job of the queue
    /// has the same dedup key (and the job has no uniqueness rule).
    async fn push(&self, job: NewJob) -> Result<JobId>;

    /// Stores all jobs or none, returning their ids in order (for a unique job that met another,
    /// that job's id).
    ///
    /// # Errors
    /// As [`Queue::push`], with fields named `jobs[i].field`; nothing is stored on error.
    async fn push_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>>;

    /// [`Queue::push`], saying whether the job was stored or met the job that holds its unique
    /// key (and replaced it, with [`crate::Unique::replace`]): in one round trip where the
    /// dialect allows it.
    ///
    /// # Errors
    /// As [`Queue::push`]; [`Error::Unsupported`] for a unique job where the backend has no
    /// unique jobs.
    async fn push_outcome(&self, job: NewJob) -> Result<PushOutcome> {
        if job.unique_value().is_some() {
            return Err(Error::Unsupported("unique jobs"));
        }
        Ok(PushOutcome::Inserted(self.push(job).await?))
    }

    /// [`Queue::push_batch`], with each job's outcome. All or none are stored, but a unique job
    /// that meets another does not fail the batch: it reports that job. Of two jobs of one
    /// batch with the same key, the first is stored and the second meets it.
    ///
    /// # Errors
    /// As [`Queue::push_batch`].
    async fn push_batch_outcomes(&self, jobs: Vec<NewJob>) -> Result<Vec<PushOutcome>> {
        if jobs.iter().any(|j| j.unique_value().is_some()) {
            return Err(Error::Unsupported("unique jobs"));
        }
        let ids = self.push_batch(jobs).await?;
        Ok(ids.into_iter().map(PushOutcome::Inserted).collect())
    }

    /// Claims up to `limit` due pending jobs of one queue, highest priority first, then oldest
    /// `run_at`, then id. Returns at once (possibly empty); see [`Queue::wait_for_work`].
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad request; [`Error::Unavailable`].
    async fn pop(&self, req: PopRequest) -> Result<Vec<Leased>> {
        let checked = CheckedPop::new(req, &self.capabilities().limits)?;
        self.pop_checked(&checked).await
    }

    /// [`Queue::pop`] with a request validated once before (a worker claims with the same
    /// request again and again). Only the limit is checked again, against this queue's limits.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the limit exceeds this queue's `max_pop`;
    /// [`Error::Unavailable`].
    async fn pop_checked(&self, req: &CheckedPop) -> Result<Vec<Leased>>;

    /// Marks the job completed.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] or [`Error::Cancelled`] when the lease is no longer current.
    async fn ack(&self, lease: &Lease) -> Result<()>;

    /// Completes every job whose lease is still current in one statement; returns how many.
    /// Leases that were lost are skipped, not errors.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when there are more leases than the batch limit.
    async fn ack_batch(&self, leases: &[Lease]) -> Result<u64>;

    /// [`Queue::ack_batch`] of `leases`, then [`Queue::pop_checked`] of `req`: where the
    /// backend can, in one round trip (a worker that completes one batch and claims the next
    /// saves a round trip per batch). Returns how many leases were completed, and the claim's
    /// outcome.
    ///
    /// # Errors
    /// The outer error: nothing was completed (the leases may be acknowledged again later).
    /// The inner error: the completion stands, the claim failed.
    async fn ack_batch_and_pop(
        &self,
        leases: &[Lease],
        req: &CheckedPop,
    ) -> Result<(u64, Result<Vec<Leased>>)> {
        let acked = self.ack_batch(leases).await?;
        Ok((acked, self.pop_checked(req).await))
    }

    /// Marks the job completed and stores `output` with it, in the same statement; `get`
    /// returns it as [`Job::output`].
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `output` when it is larger than the queue's
    /// `max_output_bytes` (nothing is changed); [`Error::LeaseLost`] or [`Error::Cancelled`].
    async fn ack_with_output(
        &self,
        lease: &Lease,
        output: &serde_json::value::RawValue,
    ) -> Result<()> {
        let _ = (lease, output);
        Err(Error::Unsupported("recorded output"))
    }

    /// Gives the job back to run again after `snooze.delay` without spending the attempt, and
    /// counts the snooze ([`Job::snoozes`]). A job that has snoozed `snooze.max_snoozes` times
    /// already is failed instead, by the retry policy, with an error saying so.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `delay` or `max_snoozes`; [`Error::LeaseLost`] or
    /// [`Error::Cancelled`].
    async fn snooze(&self, lease: &Lease, snooze: Snooze) -> Result<SnoozeOutcome> {
        let _ = (lease, snooze);
        Err(Error::Unsupported("snooze"))
    }

    /// Merges `patch` (a JSON object) into the job's metadata by the rules of JSON Merge Patch
    /// (RFC 7396: objects merge key by key, `null` removes a key), fenced by the lease like every
    /// other transition of a running job; returns the metadata as stored.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `meta` when `patch` is not an object or the result would
    /// be larger than the queue's `max_meta_bytes` (nothing is changed); [`Error::LeaseLost`]
    /// or [`Error::Cancelled`]; [`Error::Conflict`] when other writes of the row won 64 times
    /// in a row (nothing is changed).
    async fn merge_meta(
        &self,
        lease: &Lease,
        patch: &serde_json::Value,
    ) -> Result<serde_json::Value> {
        let _ = (lease, patch);
        Err(Error::Unsupported("metadata"))
    }

    /// Changes when a pending job becomes claimable, its priority, or both.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty change or a bad time; [`Error::NotFound`];
    /// [`Error::InvalidState`] when the job is not pending (running, finished).
    async fn reschedule(&self, id: JobId, change: Reschedule) -> Result<()> {
        let _ = (id, change);
        Err(Error::Unsupported("reschedule"))
    }

    /// Records a failure: back to pending after a backoff, or dead when the failure is permanent
    /// or the attempts are used up. The decision is the backend's [`crate::RetryPolicy`]'s.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] or [`Error::Cancelled`].
    async fn fail(&self, lease: &Lease, failure: Failure) -> Result<FailOutcome>;

    /// Pushes the lease's expiry to `by` from now; returns the lease with its new expiry.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] or [`Error::Cancelled`]; [`Error::InvalidInput`] for a bad duration.
    async fn extend(&self, lease: &Lease, by: Duration) -> Result<Lease>;

    /// Gives the job back (pending, due now) without counting the attempt, e.g. at shutdown.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] or [`Error::Cancelled`].
    async fn release(&self, lease: &Lease) -> Result<()>;

    /// Returns running jobs whose lease expired to pending (or dead, when their attempts are
    /// used up); returns how many it rescued.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    async fn rescue_expired(&self) -> Result<u64>;

    /// Cancels a pending or running job. A running job's holder learns of it through
    /// [`Error::Cancelled`] on its next transition.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidState`] when the job already finished.
    async fn cancel(&self, id: JobId) -> Result<()>;

    /// Brings a dead or cancelled job back to pending, due now, with its attempts reset. A
    /// step of a workflow comes back waiting until every job it needs has finished as it needs
    /// (at once pending when they have), and the steps its failure cancelled wait again, all
    /// in one transaction.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidState`] for any other state; [`Error::Duplicate`]
    /// when a live job now holds its dedup key; [`Error::DependencyFailed`] for a step that
    /// needs a job that is dead, cancelled or deleted (retry that one).
    async fn retry(&self, id: JobId) -> Result<()>;

    /// Reads one job; `None` when no job has this id.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    async fn get(&self, id: JobId) -> Result<Option<Job>>;

    /// Waits until job `id` has finished (completed, dead or cancelled) and returns it as
    /// stored, its output and errors included: a bounded poll of its row (a read by primary
    /// key after 10 ms, then at growing pauses up to [`crate::wait::WAIT_POLL_MAX`]). See also
    /// `wait_output` and `push_and_wait` on `dyn Queue`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `timeout` when it is zero or longer than
    /// [`crate::wait::MAX_WAIT`]; [`Error::NotFound`] when no job has this id (or it was
    /// deleted meanwhile); [`Error::WaitTimedOut`] when it has not finished within `timeout`
    /// (nothing is changed); as [`Queue::get`].
    async fn wait(&self, id: JobId, timeout: Duration) -> Result<Job> {
        crate::wait::until_finished(self, id, timeout).await
    }

    /// Lists jobs, newest first.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad request.
    async fn list(&self, req: ListRequest) -> Result<Vec<Job>>;

    /// Job counts per queue and state (one entry per queue that has jobs, or just `queue`).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad queue name.
    async fn stats(&self, queue: Option<&str>) -> Result<Vec<QueueStats>>;

    /// Deletes finished jobs that finished longer ago than asked; returns how many. The jobs
    /// of a workflow go together, only when every one of them matches, and only by a prune of
    /// every queue (a workflow may span queues): a prune of one queue leaves them.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad request.
    async fn prune(&self, req: PruneRequest) -> Result<u64>;

    /// How many jobs [`Queue::bulk`] with `action` and `filter` would touch now (for a
    /// confirmation).
    ///
    /// # Errors
    /// As [`Queue::bulk`].
    async fn count_matching(&self, action: BulkAction, filter: &JobFilter) -> Result<u64> {
        let _ = (action, filter);
        Err(Error::Unsupported("bulk operations"))
    }

    /// How many waiting steps of workflows [`Queue::bulk`] with `action` and `filter` would
    /// cancel first, because they need one of the jobs it cancels or deletes to complete (for
    /// a confirmation; 0 for a retry). Steps waiting on those are cancelled in turn and are
    /// not counted.
    ///
    /// # Errors
    /// As [`Queue::bulk`].
    async fn count_dependents(&self, action: BulkAction, filter: &JobFilter) -> Result<u64> {
        let _ = (action, filter);
        Ok(0)
    }

    /// Cancels, retries or deletes every job `filter` matches, in bounded batches (each its own
    /// short transaction, so a large operation never holds many locks at once; jobs that
    /// change meanwhile are skipped, not forced).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field of a bad filter, before anything is touched;
    /// a database error stops the operation after the batches already done.
    async fn bulk(&self, action: BulkAction, filter: &JobFilter) -> Result<BulkOutcome> {
        let _ = (action, filter);
        Err(Error::Unsupported("bulk operations"))
    }

    /// Runs one retention round ([`Retention`]) unless another process runs one or ran one
    /// less than the rules' interval ago (`None` then). Workers call this by themselves.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for bad rules; a database error (the round ends there; the
    /// next one goes on).
    async fn run_retention(&self, rules: &Retention) -> Result<Option<RetentionReport>> {
        let _ = rules;
        Err(Error::Unsupported("retention"))
    }

    /// Takes the lease of the queue gauge sampler for `holder` until `lease` from now, or renews
    /// it when `holder` holds it already; `false` while another holder's lease runs. One process
    /// at a time across every worker of the database sets the gauges of
    /// [`crate::metrics::record_queue_gauges`] (see [`crate::WorkerBuilder::queue_gauges`]), so
    /// that they are exported once, not once per process. `Unsupported` where the backend
    /// keeps no lease.
    ///
    /// # Errors
    /// A database error.
    async fn gauge_lease(&self, holder: uuid::Uuid, lease: Duration) -> Result<bool> {
        let _ = (holder, lease);
        Err(Error::Unsupported("gauge sampling"))
    }

    /// Gives up the gauge sampler's lease if `holder` holds it, so that another process takes
    /// it at its next turn instead of after the lease runs out.
    ///
    /// # Errors
    /// A database error.
    async fn gauge_release(&self, holder: uuid::Uuid) -> Result<()> {
        let _ = holder;
        Ok(())
    }

    /// Waits until work may have arrived on `queue` (a push through this value, or a database
    /// notification where [`Wakeups::ListenNotify`]) or `timeout` passes. It may return early
    /// spuriously; callers then simply pop.
    async fn wait_for_work(&self, queue: &str, timeout: Duration);

    /// The database's current time, for computing ages and latencies on the same clock the
    /// rows use.
    ///
    /// # Errors
    /// [`Error::Unavailable`].
    async fn now(&self) -> Result<DateTime<Utc>> {
        Ok(Utc::now())
    }

    // ---------------------------------------------------------------------------------------
    // Queue controls, stored in the `queues` table and enforced inside the claim, so they hold
    // across every process.

    /// Stores a [`Workflow`](crate::Workflow): every job of it or none, in one transaction.
    /// Steps without dependencies are pending at once, the others wait (see
    /// [`crate::workflow`]).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field and the rule (an empty workflow, a step named
    /// twice, a dependency on an unknown step or on itself, a cycle, a dedup key or unique rule
    /// on a step, any job's own rules): nothing is stored; [`Error::WorkflowExists`] when its
    /// id was pushed before; [`Error::Unsupported`] where the backend has no workflows.
    async fn push_workflow(&self, workflow: crate::Workflow) -> Result<crate::PushedWorkflow> {
        let _ = workflow;
        Err(Error::Unsupported("workflows"))
    }

    /// Adds `jobs` to the open batch `workflow` ([`Workflow::open_batch`](crate::Workflow::open_batch)),
    /// all or none: its callback waits for them too. Their step names are their ids.
    ///
    /// # Errors
    /// [`Error::UnknownWorkflow`]; [`Error::WorkflowSealed`] when it is not an open batch
    /// (nothing is stored); [`Error::InvalidInput`] as for a push.
    async fn batch_add(
        &self,
        workflow: crate::WorkflowId,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<JobId>> {
        let _ = (workflow, jobs);
        Err(Error::Unsupported("workflows"))
    }

    /// Seals the open batch `workflow`: it takes no more jobs, and its callback runs once
    /// every member has finished (at once when they all have).
    ///
    /// # Errors
    /// [`Error::UnknownWorkflow`]; [`Error::WorkflowSealed`] when it was sealed already.
    async fn batch_seal(&self, workflow: crate::WorkflowId) -> Result<()> {
        let _ = workflow;
        Err(Error::Unsupported("workflows"))
    }

    /// A workflow: its row, its jobs (each with its step and dependencies); `None` when there
    /// is none.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    async fn workflow(&self, id: crate::WorkflowId) -> Result<Option<crate::WorkflowInfo>> {
        let _ = id;
        Err(Error::Unsupported("workflows"))
    }

    /// Workflows, newest first, each with how many of its jobs are in each state.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `limit` outside 1 to 1,000.
    async fn workflows(
        &self,
        req: crate::WorkflowListRequest,
    ) -> Result<Vec<crate::WorkflowSummary>> {
        let _ = req;
        Err(Error::Unsupported("workflows"))
    }

    /// What job `id` depends on, each with its step, its state and its recorded output (a
    /// handler reads them with [`JobContext::dependencies`](crate::JobContext::dependencies)).
    /// Empty for a job without dependencies.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    async fn dependencies(&self, id: JobId) -> Result<Vec<crate::Dependency>> {
        let _ = id;
        Err(Error::Unsupported("workflows"))
    }

    /// Settles the waiting jobs that depend on `finished`: jobs of workflows completed (or
    /// failed) inside a transaction of the caller's (`complete_in_tx`), which has committed
    /// since. Call it after that commit; a worker does for a handler that
    /// [marked its job completed](crate::JobContext::mark_completed). Without it the sweep
    /// ([`Queue::settle_waiting`]) settles them within a rescue interval.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    async fn settle_dependents(&self, finished: &[JobId]) -> Result<()> {
        let _ = finished;
        Ok(())
    }

    /// Settles every waiting job of every workflow that its dependencies allow to go on (or
    /// that a failed dependency cancels): what a process that died between a dependency's
    /// completion and its settling left. Workers run it with their rescue; the jobs changed.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    async fn settle_waiting(&self) -> Result<u64> {
        Ok(0)
    }

    /// Pauses `queue`: from the moment this returns, no claim gives out a job of it (jobs
    /// already claimed run to the end, pushes are still accepted). Pausing a paused queue is
    /// not an error.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `queue` for a bad name; [`Error::Unsupported`] where the
    /// backend has no queue controls.
    async fn pause(&self, queue: &str) -> Result<()> {
        let _ = queue;
        Err(Error::Unsupported("queue controls"))
    }

    /// Resumes a paused `queue` and wakes its workers (in other processes too where the
    /// database has notifications). Resuming a running queue is not an error.
    ///
    /// # Errors
    /// As [`Queue::pause`].
    async fn resume(&self, queue: &str) -> Result<()> {
        let _ = queue;
        Err(Error::Unsupported("queue controls"))
    }

    /// Sets (`Some(n)`) or removes (`None`) the global concurrency limit of `queue`: a claim
    /// gives out a job of it only while fewer than `n` of its jobs hold a live (unexpired)
    /// lease, counted inside the claim, across every process. A lease that expires frees its
    /// place at once, before any rescue. Jobs already running when a lower limit is set keep
    /// their leases; claims wait until the count is below the limit.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `concurrency_limit` for 0 (pause the queue instead) or
    /// more than [`MAX_CONCURRENCY_LIMIT`], or `queue` for a bad name; nothing is stored.
    async fn set_concurrency_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        let _ = (queue, limit);
        Err(Error::Unsupported("queue controls"))
    }

    /// Sets (`Some`) or removes (`None`) the rate limit of `queue`: at most `limit` of its
    /// jobs start in each window of `period`, across every process (see [`RateLimit`] for the
    /// windows). Takes effect at the next claim in every process; a worker held back by it
    /// sleeps until the next window opens instead of polling. The count starts afresh.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `rate_limit.limit` or `rate_limit.period` (see
    /// [`RateLimit::new`]), or `queue` for a bad name; nothing is stored.
    async fn set_rate_limit(&self, queue: &str, rate: Option<RateLimit>) -> Result<()> {
        let _ = (queue, rate);
        Err(Error::Unsupported("queue controls"))
    }

    /// Sets (`Some(n)`) or removes (`None`) the key limit of `queue`: a claim gives out a job
    /// with a concurrency key ([`crate::NewJob::concurrency_key`]) only while fewer than `n` jobs
    /// with that key hold a live lease, counted inside the claim, across every process. Jobs of
    /// a key at its limit wait without holding back the jobs of other keys behind them; an
    /// expired lease frees its key's place at once. Jobs without a key are not limited by it.
    /// A queue with a key limit also takes turns across its keys, as with
    /// [`Queue::set_fair_shares`].
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `key_limit` for 0 or more than
    /// [`MAX_CONCURRENCY_LIMIT`], or `queue` for a bad name; nothing is stored.
    async fn set_key_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        let _ = (queue, limit);
        Err(Error::Unsupported("queue controls"))
    }

    /// Sets (`Some`) or removes (`None`) the key rate limit of `queue`: at most `limit` of its
    /// jobs with the same concurrency key start in each window of `period`, across every
    /// process (the windows of [`RateLimit`], counted per key). Jobs of a key that used its
    /// window wait without holding back other keys' jobs; jobs without a key are not limited
    /// by it. Like a key limit, it makes claims take turns across keys. The counts start
    /// afresh.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `key_rate_limit.limit` or `key_rate_limit.period` (the
    /// rules of [`RateLimit::new`]), or `queue` for a bad name; nothing is stored.
    async fn set_key_rate_limit(&self, queue: &str, rate: Option<RateLimit>) -> Result<()> {
        let _ = (queue, rate);
        Err(Error::Unsupported("queue controls"))
    }

    /// Turns fair shares of `queue` on or off: each claim visits the queue's concurrency keys
    /// in turn, resuming after the key the previous claim served last (the jobs without a key
    /// take one turn of their own), so a key with a deep backlog does not delay the jobs of
    /// another key: a key that has a due job is served within as many claims as there are keys
    /// with due jobs. Within a key, jobs go in priority order.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `queue` for a bad name.
    async fn set_fair_shares(&self, queue: &str, on: bool) -> Result<()> {
        let _ = (queue, on);
        Err(Error::Unsupported("queue controls"))
    }

    /// Every queue that is paused or limited, by name.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    async fn controls(&self) -> Result<Vec<QueueControl>> {
        Err(Error::Unsupported("queue controls"))
    }

    // ---------------------------------------------------------------------------------------
    // Periodic jobs (schedules): see [`crate::periodic`]. `now` is the scheduler's clock (the
    // database's in production). A [`crate::periodic::Scheduler`] calls these; so does the
    // `queue schedules` command.

    /// Registers the schedule `job`: creates it, or rewrites its definition when it differs
    /// (a new expression or time zone starts it afresh: no slot before `now` is enqueued), or,
    /// unchanged, renews a code registration's lease.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field for a bad schedule or lease, and (field `name`)
    /// for an operator's registration of a schedule that a running process registered in code;
    /// nothing is stored. [`Error::Unsupported`] where the backend has no schedules.
    async fn schedule_register(
        &self,
        job: &PeriodicJob,
        how: Registration,
        now: DateTime<Utc>,
    ) -> Result<Registered> {
        let _ = (job, how, now);
        Err(Error::Unsupported("periodic jobs"))
    }

    /// Renews the lease of the code schedule `job` until `lease` after `now`, without
    /// rewriting its stored definition (registering it again when it is missing).
    ///
    /// # Errors
    /// As [`Queue::schedule_register`].
    async fn schedule_refresh(
        &self,
        job: &PeriodicJob,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let _ = (job, lease, now);
        Err(Error::Unsupported("periodic jobs"))
    }

    /// Removes the schedule `name`: it fires no more. Its jobs already pushed stay.
    ///
    /// # Errors
    /// [`Error::UnknownSchedule`]; [`Error::InvalidInput`] naming `name` for a bad name, or for
    /// a schedule that a running process registered in code (remove it from the code instead).
    async fn schedule_remove(&self, name: &str, now: DateTime<Utc>) -> Result<()> {
        let _ = (name, now);
        Err(Error::Unsupported("periodic jobs"))
    }

    /// Every stored schedule, by name, with its last slot and the state of that slot's job.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    async fn schedules(&self) -> Result<Vec<ScheduleInfo>> {
        Err(Error::Unsupported("periodic jobs"))
    }

    /// One tick at `now`: for every active schedule, enqueues its due slots (per its misfire
    /// policy), each exactly once across every process ticking at the same time.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`] when the schedules cannot be read; a
    /// schedule that cannot be fired is reported in [`TickReport::failed`].
    async fn schedule_tick(&self, now: DateTime<Utc>) -> Result<TickReport> {
        let _ = now;
        Err(Error::Unsupported("periodic jobs"))
    }
}

/// Validates a batch: its length and every job, naming the failing job's index.
///
/// # Errors
/// [`Error::InvalidInput`] with field `jobs` or `jobs[i].field`.
pub fn validate_batch(jobs: &[NewJob], limits: &Limits) -> Result<()> {
    validate_batch_at(jobs, limits, Utc::now())
}

/// [`validate_batch`] with `now` as the time each `run_at` is checked against.
///
/// # Errors
/// As [`validate_batch`].
pub fn validate_batch_at(jobs: &[NewJob], limits: &Limits, now: DateTime<Utc>) -> Result<()> {
    validate::batch_len(jobs.len(), limits)?;
    for (i, job) in jobs.iter().enumerate() {
        job.validate_at(limits, now)
            .map_err(|e| e.in_field(&format!("jobs[{i}]")))?;
    }
    Ok(())
}

/// Validates the leases of an `ack_batch`.
///
/// # Errors
/// [`Error::InvalidInput`] with field `leases`.
pub fn validate_ack_batch(leases: &[Lease], limits: &Limits) -> Result<()> {
    if leases.len() > limits.max_batch {
        return Err(Error::invalid(
            "leases",
            format!(
                "at most {} per call (got {})",
                limits.max_batch,
                leases.len()
            ),
        ));
    }
    Ok(())
}
