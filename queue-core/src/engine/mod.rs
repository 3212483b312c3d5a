//! The engine: [`Queue`] implemented once, over a narrow [`Driver`] per SQL dialect.
//!
//! ```text
//! user / worker ──> Queue (this engine): validate once, decide (retry, rescue, dead),
//!                    diagnose lease and state errors, sort, wake, retry lock conflicts,
//!                    run the migration loop
//!                      │ one call per statement
//!                      v
//!                   Driver (a backend crate): statement text, binding, row decoding,
//!                    classify(driver error) -> DriverFault
//! ```
//!
//! A backend crate is a [`Driver`], its builder and its migrations; its public queue type wraps
//! an [`Engine`] and implements [`Backend`], which makes it a [`Queue`].

mod claim;
mod coalesce;
mod controls;
mod cursor;
pub mod driver;
pub mod hosts;
mod jobs;
mod maintenance;
mod options;
mod periodic;
mod push;
mod retire;
mod running;
pub mod statements;
mod unique;
mod workflow;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::job::{
    FailOutcome, Failure, Job, JobId, Lease, Leased, NewJob, Reschedule, Snooze, SnoozeOutcome,
};
use crate::periodic::{PeriodicJob, Registered, Registration, ScheduleInfo, TickReport};
use crate::queue::{
    BulkAction, BulkOutcome, Capabilities, CheckedPop, JobFilter, ListRequest, PopRequest,
    PruneRequest, Queue, QueueControl, QueueStats, RateLimit,
};
use crate::retention::{Retention, RetentionReport};
use crate::retry::RetryPolicy;
use crate::unique::PushOutcome;
use crate::validate::Limits;
use crate::wake::WakeHub;

use coalesce::Coalescer;
pub use driver::{
    first_contact, micros, rate_limit_of, Claim, ClaimAfter, Completion, Controls, Driver,
    DriverFault, Expired, JobClaim, JobComplete, JobCompleteMany, JobFailDead, JobFailRetry,
    JobInsert, JobInsertUnique, JobMatch, JobMetaSet, JobPrune, JobReschedule, JobRescue,
    JobSnooze, JobUniqueReplace, KeyPage, KeyRatePrune, KeyRateRecord, Lifecycle, Maintenance,
    MaintenanceRound, Migration, Operators, Push, RateRecord, RateState, Running, ScheduleAdvance,
    Schedules, StoredMeta, StoredSchedule, StoredWorkflow, Target, UniqueIndex, UniqueInsert,
    WorkflowEdge, WorkflowInsert, WorkflowPrune, WorkflowPruneLock, WorkflowPruned, Workflows,
};
pub use options::{CommonOptions, MAX_LOCK_RETRIES, SLOW_STATEMENT};
pub use retire::Retirement;

/// The log target of the engine.
pub const LOG_TARGET: &str = "queue::engine";

/// Expired leases handled per round of `rescue_expired`.
const RESCUE_CHUNK: usize = 1_000;
/// Rows deleted per statement of `prune`.
const PRUNE_CHUNK: usize = 5_000;
/// The error stored on a job whose lease expired.
const LEASE_EXPIRED: &str = "lease expired";
/// Optimistic claim: most rounds of "read candidates, try to claim them" per pop.
const OPTIMISTIC_ROUNDS: usize = 8;
/// Optimistic claim: after a lost race, this many fully successful claims pass before the
/// claimer returns to the exact claim order.
const CONTENTION_MEMORY: u32 = 16;

/// How an engine wakes workers in other processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteWakeups {
    /// Not at all: other processes find new work at their next poll.
    Off,
    /// Through the driver's database notifications; single pushes to one queue within `window`
    /// share one notification (see the coalescing rules in the crate docs).
    Notify {
        /// The coalescing window of single pushes (zero: one notification per push).
        window: Duration,
    },
}

/// A backend's public queue type: wraps an [`Engine`], and through this trait is a [`Queue`].
pub trait Backend: Send + Sync + 'static {
    /// The dialect's driver.
    type Driver: Driver;

    /// The engine behind this queue value.
    fn engine(&self) -> &Engine<Self::Driver>;
}

/// [`Queue`] over a [`Driver`]. Cheap to clone: clones share the driver, the wake-up hub and
/// the counters.
pub struct Engine<D: Driver> {
    inner: Arc<Inner<D>>,
}

impl<D: Driver> Clone for Engine<D> {
    fn clone(&self) -> Self {
        Engine {
            inner: self.inner.clone(),
        }
    }
}

impl<D: Driver> std::fmt::Debug for Engine<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("capabilities", &self.inner.caps)
            .finish_non_exhaustive()
    }
}

struct Inner<D: Driver> {
    driver: Arc<D>,
    caps: Capabilities,
    retry_policy: RetryPolicy,
    lock_retries: u32,
    keep_completed: bool,
    hub: Arc<WakeHub>,
    /// Some when workers in other processes are woken through the driver.
    remote: Option<Coalescer>,
    /// Optimistic claim: how many more claims pick at random after the last lost race.
    contention: AtomicU32,
    /// Queues last seen paused or limited: their claims take the controlled path.
    controlled: std::sync::Mutex<HashSet<String>>,
    /// Queues held back by their rate limit with a wake-up set for their next window.
    throttled: Arc<std::sync::Mutex<HashSet<String>>>,
    /// Keyed queues whose latest turn of jobs without a key found none, and when
    /// (`controls::UNKEYED_RECHECK`).
    unkeyed_idle: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
    /// The metric handles of the queues and kinds seen so far.
    metrics: crate::metrics::Handles,
    /// Where the claims of each queue with a backlog stopped (`cursor`).
    cursors: cursor::ClaimCursors,
}

impl<D: Driver> Backend for Engine<D> {
    type Driver = D;

    fn engine(&self) -> &Engine<D> {
        self
    }
}

/// What a push is, for its wake-ups.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PushKind {
    /// One job outside a caller's transaction: its notification may be coalesced.
    Single,
    /// A batch, or anything inside a caller's transaction: one notification per queue.
    Other,
}

impl<D: Driver> Engine<D> {
    /// An engine over `driver`, with the capabilities the backend's builder detected and the
    /// shared options it validated.
    pub fn new(
        driver: D,
        capabilities: Capabilities,
        options: &CommonOptions,
        remote: RemoteWakeups,
    ) -> Self {
        Engine {
            inner: Arc::new(Inner {
                driver: Arc::new(driver),
                caps: capabilities,
                retry_policy: options.retry_policy.clone(),
                lock_retries: options.lock_retries,
                keep_completed: options.keep_completed,
                hub: Arc::new(WakeHub::new()),
                remote: match remote {
                    RemoteWakeups::Off => None,
                    RemoteWakeups::Notify { window } => Some(Coalescer::new(window)),
                },
                contention: AtomicU32::new(0),
                controlled: std::sync::Mutex::new(HashSet::new()),
                throttled: Arc::default(),
                unkeyed_idle: std::sync::Mutex::default(),
                metrics: crate::metrics::Handles::default(),
                cursors: cursor::ClaimCursors::default(),
            }),
        }
    }

    /// Whether completed jobs stay in the table (see [`Completion`]).
    pub fn keeps_completed(&self) -> bool {
        self.inner.keep_completed
    }

    /// What the completions of a batch (no outputs) do with their rows.
    pub(crate) fn batch_completion(&self) -> Completion {
        Completion::of(self.keeps_completed(), None)
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.inner.driver
    }

    /// What this queue can do.
    pub fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    fn limits(&self) -> &Limits {
        &self.inner.caps.limits
    }

    /// The queue's error for a driver error.
    pub fn error(&self, e: D::Error) -> Error {
        self.inner.driver.classify(&e).error(e)
    }

    fn is_lock_conflict(&self, e: &D::Error) -> bool {
        self.inner.driver.classify(e) == DriverFault::LockConflict
    }

    /// Runs `op` (one autocommit statement, or a whole transaction of the driver's), trying it
    /// again after a deadlock, lock wait timeout or serialization failure, with jittered
    /// exponential backoff, at most `lock_retries` times.
    async fn retried<T, F, Fut>(&self, what: &'static str, mut op: F) -> Result<T, D::Error>
    where
        F: FnMut() -> Fut + Send,
        Fut: Future<Output = Result<T, D::Error>> + Send,
        T: Send,
    {
        let mut attempt = 0;
        loop {
            match op().await {
                Err(e) if attempt < self.inner.lock_retries && self.is_lock_conflict(&e) => {
                    attempt += 1;
                    let base_ms = 2u64.saturating_pow(attempt.min(10)) as f64;
                    let wait = Duration::from_secs_f64(base_ms * (0.5 + fastrand::f64()) / 1000.0);
                    tracing::debug!(target: LOG_TARGET, what, attempt, error = %e, ?wait, "lock conflict, trying again");
                    tokio::time::sleep(wait).await;
                }
                other => return other,
            }
        }
    }

    /// Wakes this queue value's workers waiting on `queue` for `jobs` new jobs (not other
    /// processes'), e.g. after a caller's transaction that pushed has committed.
    pub fn wake_local(&self, queue: &str, jobs: usize) {
        self.inner.cursors.forget(queue);
        self.inner.hub.notify(queue, jobs);
    }

    /// Wakes the workers of `queue` for `jobs` jobs that became due: in this process at once,
    /// in others through the driver's notifications where it has them.
    ///
    /// Notifications to other processes go through the same coalescing as single pushes, so a
    /// burst of transitions (a shutdown releasing its buffered jobs, a rescue) sends one or two
    /// per window instead of one each.
    pub async fn wake(&self, queue: &str, jobs: usize) {
        self.inner.cursors.forget(queue);
        self.inner.hub.notify(queue, jobs);
        let Some(c) = &self.inner.remote else {
            return;
        };
        if c.lead(queue) {
            if let Err(e) = self.inner.driver.notify(&[queue]).await {
                tracing::warn!(target: LOG_TARGET, queue, error = %e, "could not send a wake-up; workers elsewhere find the jobs at their next poll");
            }
        } else {
            self.trail(c, queue);
        }
    }

    /// Schedules a trailing notification of `queue` at the end of the coalescing window.
    fn trail(&self, c: &Coalescer, queue: &str) {
        let driver = self.inner.driver.clone();
        let queue_owned = queue.to_owned();
        c.trail(queue, move || async move {
            if let Err(e) = driver.notify(&[queue_owned.as_str()]).await {
                tracing::warn!(target: LOG_TARGET, queue = %queue_owned, error = %e, "could not send a wake-up; workers elsewhere find the job at their next poll");
            }
        });
    }

    // ---------------------------------------------------------------------------------------
    // Migrations

    /// Creates or upgrades the schema under the dialect's migration lock.
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    pub async fn migrate(&self) -> Result<()> {
        self.migrate_until(i64::MAX).await
    }

    /// Applies the migrations up to and including `version` only, leaving the schema as a
    /// release whose newest migration that was made it: for tests that upgrade such a
    /// database. Applications call [`Engine::migrate`].
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    #[doc(hidden)]
    pub async fn migrate_until(&self, version: i64) -> Result<()> {
        self.migrate_where(|v| v <= version).await
    }

    /// Applies every migration but those listed, leaving the schema as one that a later
    /// [`Engine::migrate`] brings up to date: for tests that upgrade a database whose jobs
    /// table lacks only the listed migrations. Applications call [`Engine::migrate`].
    ///
    /// # Errors
    /// [`Error::Unavailable`] or [`Error::Database`].
    #[doc(hidden)]
    pub async fn migrate_skipping(&self, versions: &[i64]) -> Result<()> {
        self.migrate_where(|v| !versions.contains(&v)).await
    }

    async fn migrate_where(&self, wanted: impl Fn(i64) -> bool + Send + Sync) -> Result<()> {
        let d = self.driver();
        let mut m = d.migration_lock().await.map_err(|e| self.error(e))?;
        let applied = self.apply_missing(&mut m, &wanted).await;
        let unlocked = d.migration_unlock(m, applied.is_ok()).await;
        applied?;
        unlocked.map_err(|e| self.error(e))
    }

    async fn apply_missing(
        &self,
        m: &mut D::Migrator,
        wanted: &(impl Fn(i64) -> bool + Send + Sync),
    ) -> Result<()> {
        let d = self.driver();
        let applied = d.migration_applied(m).await.map_err(|e| self.error(e))?;
        for migration in d.migrations() {
            if applied.contains(&migration.version) || !wanted(migration.version) {
                continue;
            }
            d.migration_apply(m, migration)
                .await
                .map_err(|e| self.error(e))?;
            tracing::info!(target: LOG_TARGET, dialect = ?self.inner.caps.dialect, version = migration.version, name = migration.name, "migration applied");
        }
        Ok(())
    }
}

#[async_trait]
impl<B: Backend> Queue for B {
    fn capabilities(&self) -> &Capabilities {
        self.engine().capabilities()
    }

    async fn migrate(&self) -> Result<()> {
        self.engine().migrate().await
    }

    async fn push(&self, job: NewJob) -> Result<JobId> {
        self.engine().push(job).await
    }

    async fn push_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        self.engine().push_batch(jobs).await
    }

    async fn push_outcome(&self, job: NewJob) -> Result<PushOutcome> {
        self.engine().push_outcome(job).await
    }

    async fn push_batch_outcomes(&self, jobs: Vec<NewJob>) -> Result<Vec<PushOutcome>> {
        self.engine().push_batch_outcomes(jobs).await
    }

    async fn pop(&self, req: PopRequest) -> Result<Vec<Leased>> {
        self.engine().pop(req).await
    }

    async fn pop_checked(&self, req: &CheckedPop) -> Result<Vec<Leased>> {
        self.engine().pop_checked(req).await
    }

    async fn ack(&self, lease: &Lease) -> Result<()> {
        self.engine().ack(lease).await
    }

    async fn ack_batch(&self, leases: &[Lease]) -> Result<u64> {
        self.engine().ack_batch(leases).await
    }

    async fn ack_batch_and_pop(
        &self,
        leases: &[Lease],
        req: &CheckedPop,
    ) -> Result<(u64, Result<Vec<Leased>>)> {
        self.engine().ack_batch_and_pop(leases, req).await
    }

    async fn fail(&self, lease: &Lease, failure: Failure) -> Result<FailOutcome> {
        self.engine().fail(lease, failure).await
    }

    async fn ack_with_output(
        &self,
        lease: &Lease,
        output: &serde_json::value::RawValue,
    ) -> Result<()> {
        self.engine().ack_with_output(lease, output).await
    }

    async fn snooze(&self, lease: &Lease, snooze: Snooze) -> Result<SnoozeOutcome> {
        self.engine().snooze(lease, snooze).await
    }

    async fn merge_meta(
        &self,
        lease: &Lease,
        patch: &serde_json::Value,
    ) -> Result<serde_json::Value> {
        self.engine().merge_meta(lease, patch).await
    }

    async fn reschedule(&self, id: JobId, change: Reschedule) -> Result<()> {
        self.engine().reschedule(id, change).await
    }

    async fn extend(&self, lease: &Lease, by: Duration) -> Result<Lease> {
        self.engine().extend(lease, by).await
    }

    async fn release(&self, lease: &Lease) -> Result<()> {
        self.engine().release(lease).await
    }

    async fn rescue_expired(&self) -> Result<u64> {
        self.engine().rescue_expired().await
    }

    async fn cancel(&self, id: JobId) -> Result<()> {
        self.engine().cancel(id).await
    }

    async fn retry(&self, id: JobId) -> Result<()> {
        self.engine().retry(id).await
    }

    async fn get(&self, id: JobId) -> Result<Option<Job>> {
        self.engine().get(id).await
    }

    async fn list(&self, req: ListRequest) -> Result<Vec<Job>> {
        self.engine().list(req).await
    }

    async fn stats(&self, queue: Option<&str>) -> Result<Vec<QueueStats>> {
        self.engine().stats(queue).await
    }

    async fn prune(&self, req: PruneRequest) -> Result<u64> {
        self.engine().prune(req).await
    }

    async fn count_matching(&self, action: BulkAction, filter: &JobFilter) -> Result<u64> {
        self.engine().count_matching(action, filter).await
    }

    async fn count_dependents(&self, action: BulkAction, filter: &JobFilter) -> Result<u64> {
        self.engine().count_dependents(action, filter).await
    }

    async fn bulk(&self, action: BulkAction, filter: &JobFilter) -> Result<BulkOutcome> {
        self.engine().bulk(action, filter).await
    }

    async fn run_retention(&self, rules: &Retention) -> Result<Option<RetentionReport>> {
        self.engine().run_retention(rules).await
    }

    async fn gauge_lease(&self, holder: uuid::Uuid, lease: Duration) -> Result<bool> {
        self.engine().gauge_lease(holder, lease).await
    }

    async fn gauge_release(&self, holder: uuid::Uuid) -> Result<()> {
        self.engine().gauge_release(holder).await
    }

    async fn wait_for_work(&self, queue: &str, timeout: Duration) {
        self.engine().wait_for_work(queue, timeout).await
    }

    async fn now(&self) -> Result<DateTime<Utc>> {
        self.engine().now().await
    }

    // Workflows.

    async fn push_workflow(&self, workflow: crate::Workflow) -> Result<crate::PushedWorkflow> {
        self.engine().push_workflow(workflow).await
    }

    async fn batch_add(
        &self,
        workflow: crate::WorkflowId,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<JobId>> {
        self.engine().batch_add(workflow, jobs).await
    }

    async fn batch_seal(&self, workflow: crate::WorkflowId) -> Result<()> {
        self.engine().batch_seal(workflow).await
    }

    async fn workflow(&self, id: crate::WorkflowId) -> Result<Option<crate::WorkflowInfo>> {
        self.engine().workflow(id).await
    }

    async fn workflows(
        &self,
        req: crate::WorkflowListRequest,
    ) -> Result<Vec<crate::WorkflowSummary>> {
        self.engine().workflows(req).await
    }

    async fn dependencies(&self, id: JobId) -> Result<Vec<crate::Dependency>> {
        self.engine().dependencies(id).await
    }

    async fn settle_waiting(&self) -> Result<u64> {
        self.engine().settle_waiting().await
    }

    async fn settle_dependents(&self, finished: &[JobId]) -> Result<()> {
        self.engine().settle_dependents(finished).await
    }

    // Queue controls.

    async fn pause(&self, queue: &str) -> Result<()> {
        self.engine().pause(queue).await
    }

    async fn resume(&self, queue: &str) -> Result<()> {
        self.engine().resume(queue).await
    }

    async fn set_concurrency_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        self.engine().set_concurrency_limit(queue, limit).await
    }

    async fn set_rate_limit(&self, queue: &str, rate: Option<RateLimit>) -> Result<()> {
        self.engine().set_rate_limit(queue, rate).await
    }

    async fn set_key_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        self.engine().set_key_limit(queue, limit).await
    }

    async fn set_key_rate_limit(&self, queue: &str, rate: Option<RateLimit>) -> Result<()> {
        self.engine().set_key_rate_limit(queue, rate).await
    }

    async fn set_fair_shares(&self, queue: &str, on: bool) -> Result<()> {
        self.engine().set_fair_shares(queue, on).await
    }

    async fn controls(&self) -> Result<Vec<QueueControl>> {
        self.engine().controls().await
    }

    // Periodic jobs (schedules).

    async fn schedule_register(
        &self,
        job: &PeriodicJob,
        how: Registration,
        now: DateTime<Utc>,
    ) -> Result<Registered> {
        self.engine().schedule_register(job, how, now).await
    }

    async fn schedule_refresh(
        &self,
        job: &PeriodicJob,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<()> {
        self.engine().schedule_refresh(job, lease, now).await
    }

    async fn schedule_remove(&self, name: &str, now: DateTime<Utc>) -> Result<()> {
        self.engine().schedule_remove(name, now).await
    }

    async fn schedules(&self) -> Result<Vec<ScheduleInfo>> {
        self.engine().schedules().await
    }

    async fn schedule_tick(&self, now: DateTime<Utc>) -> Result<TickReport> {
        self.engine().schedule_tick(now).await
    }
}

/// Claim order: priority descending, then run_at, then id. Multi-row claims return rows in no
/// particular order.
fn sort_claimed(jobs: &mut [Leased]) {
    jobs.sort_by(|a, b| {
        b.job
            .priority
            .cmp(&a.job.priority)
            .then(a.job.run_at.cmp(&b.job.run_at))
            .then(a.job.id.cmp(&b.job.id))
    });
}

/// The distinct queues of a batch, in order of first appearance, with how many jobs each got.
fn queue_counts(jobs: &[NewJob]) -> Vec<(&str, usize)> {
    count_by(jobs.iter().map(NewJob::queue))
}

/// Distinct items in order of first appearance, with their counts.
fn count_by<'a>(items: impl Iterator<Item = &'a str>) -> Vec<(&'a str, usize)> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for item in items {
        match index.get(item) {
            Some(&i) => counts[i].1 += 1,
            None => {
                index.insert(item, counts.len());
                counts.push((item, 1));
            }
        }
    }
    counts
}

fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    count_by(items).into_iter().map(|(s, _)| s).collect()
}
