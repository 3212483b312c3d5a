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

mod coalesce;
mod controls;
pub mod driver;
pub mod hosts;
mod options;
mod periodic;
mod retire;
pub mod statements;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::job::{FailOutcome, Failure, Job, JobId, JobState, Lease, Leased, NewJob};
use crate::periodic::{PeriodicJob, Registered, Registration, ScheduleInfo, TickReport};
use crate::queue::{
    validate_ack_batch, validate_batch, Capabilities, CheckedPop, ClaimStrategy, ListRequest,
    PopRequest, PruneRequest, Queue, QueueControl, QueueStats,
};
use crate::retry::{FailDecision, RetryPolicy};
use crate::validate::{self, Limits};
use crate::wake::WakeHub;

use coalesce::Coalescer;
pub use driver::{
    first_contact, micros, Driver, DriverFault, Expired, JobClaim, JobFailDead, JobFailRetry,
    JobInsert, JobPrune, JobRescue, Migration, ScheduleAdvance, StoredSchedule, Target,
    UniqueIndex,
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
    hub: Arc<WakeHub>,
    /// Some when workers in other processes are woken through the driver.
    remote: Option<Coalescer>,
    /// Optimistic claim: how many more claims pick at random after the last lost race.
    contention: AtomicU32,
    /// Queues last seen paused or limited: their claims take the controlled path.
    controlled: std::sync::Mutex<HashSet<String>>,
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
                hub: Arc::new(WakeHub::new()),
                remote: match remote {
                    RemoteWakeups::Off => None,
                    RemoteWakeups::Notify { window } => Some(Coalescer::new(window)),
                },
                contention: AtomicU32::new(0),
                controlled: std::sync::Mutex::new(HashSet::new()),
            }),
        }
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
        self.inner.hub.notify(queue, jobs);
    }

    /// Wakes the workers of `queue` for `jobs` jobs that became due: in this process at once,
    /// in others through the driver's notifications where it has them.
    ///
    /// Notifications to other processes go through the same coalescing as single pushes, so a
    /// burst of transitions (a shutdown releasing its buffered jobs, a rescue) sends one or two
    /// per window instead of one each.
    pub async fn wake(&self, queue: &str, jobs: usize) {
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
        let d = self.driver();
        let mut m = d.migration_lock().await.map_err(|e| self.error(e))?;
        let applied = self.apply_missing(&mut m).await;
        let unlocked = d.migration_unlock(m, applied.is_ok()).await;
        applied?;
        unlocked.map_err(|e| self.error(e))
    }

    async fn apply_missing(&self, m: &mut D::Migrator) -> Result<()> {
        let d = self.driver();
        let applied = d.migration_applied(m).await.map_err(|e| self.error(e))?;
        for migration in d.migrations() {
            if applied.contains(&migration.version) {
                continue;
            }
            d.migration_apply(m, migration)
                .await
                .map_err(|e| self.error(e))?;
            tracing::info!(target: LOG_TARGET, dialect = ?self.inner.caps.dialect, version = migration.version, name = migration.name, "migration applied");
        }
        Ok(())
    }

    // ---------------------------------------------------------------------------------------
    // Pushing

    /// Stores one job.
    ///
    /// # Errors
    /// As [`Queue::push`].
    pub async fn push(&self, job: NewJob) -> Result<JobId> {
        job.validate(self.limits())?;
        self.insert(Target::Pool, std::slice::from_ref(&job), PushKind::Single)
            .await?;
        Ok(job.id())
    }

    /// Stores every job or none.
    ///
    /// # Errors
    /// As [`Queue::push_batch`].
    pub async fn push_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        validate_batch(&jobs, self.limits())?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        check_batch_dedup(&jobs)?;
        self.insert(Target::Pool, &jobs, PushKind::Other).await?;
        Ok(jobs.iter().map(NewJob::id).collect())
    }

    /// Stores one job inside the caller's transaction on `conn`: it exists iff that commits.
    ///
    /// # Errors
    /// As [`Queue::push`].
    pub async fn push_in(&self, conn: &mut D::Conn, job: NewJob) -> Result<JobId> {
        job.validate(self.limits())?;
        self.insert(
            Target::Tx(conn),
            std::slice::from_ref(&job),
            PushKind::Other,
        )
        .await?;
        Ok(job.id())
    }

    /// Stores every job or none inside the caller's transaction on `conn`.
    ///
    /// # Errors
    /// As [`Queue::push_batch`].
    pub async fn push_batch_in(&self, conn: &mut D::Conn, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        validate_batch(&jobs, self.limits())?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        check_batch_dedup(&jobs)?;
        self.insert(Target::Tx(conn), &jobs, PushKind::Other)
            .await?;
        Ok(jobs.iter().map(NewJob::id).collect())
    }

    async fn insert(
        &self,
        target: Target<'_, D::Conn>,
        jobs: &[NewJob],
        kind: PushKind,
    ) -> Result<()> {
        let now = Utc::now();
        let delays: Vec<Duration> = jobs.iter().map(|j| j.delay_from(now)).collect();
        let counts = queue_counts(jobs);
        // Notifications to other processes: in the insert itself, except for a single push
        // inside a coalescing window, which gets a trailing one once it has committed.
        let mut trail = None;
        let notify: Vec<&str> = match (&self.inner.remote, kind, &target) {
            (None, _, _) => Vec::new(),
            (Some(c), PushKind::Single, Target::Pool) => {
                let queue = counts[0].0;
                if c.lead(queue) {
                    vec![queue]
                } else {
                    trail = Some(queue);
                    Vec::new()
                }
            }
            (Some(_), _, _) => counts.iter().map(|(q, _)| *q).collect(),
        };
        let p = JobInsert {
            jobs,
            delays: &delays,
            notify: &notify,
        };
        let d = self.driver();
        match target {
            Target::Pool => {
                if let Err(e) = self.retried("push", || d.job_insert(Target::Pool, p)).await {
                    return Err(self.insert_error(Target::Pool, jobs, e).await);
                }
                for (queue, n) in &counts {
                    self.inner.hub.notify(queue, *n);
                }
                if let (Some(queue), Some(c)) = (trail, &self.inner.remote) {
                    self.trail(c, queue);
                }
            }
            Target::Tx(conn) => {
                if let Err(e) = d.job_insert(Target::Tx(&mut *conn), p).await {
                    return Err(self.insert_error(Target::Tx(conn), jobs, e).await);
                }
            }
        }
        Ok(())
    }

    /// The error for a failed insert of `jobs`: a unique violation on the live dedup keys
    /// becomes [`Error::Duplicate`] naming the key that a live job holds.
    async fn insert_error(
        &self,
        target: Target<'_, D::Conn>,
        jobs: &[NewJob],
        e: D::Error,
    ) -> Error {
        let which = match self.inner.driver.classify(&e) {
            DriverFault::UniqueViolation(
                which @ (UniqueIndex::DedupKey | UniqueIndex::Unknown),
            ) => which,
            _ => return self.error(e),
        };
        let keyed: Vec<(&str, &str)> = jobs
            .iter()
            .filter_map(|j| j.dedup_key_value().map(|k| (j.queue(), k)))
            .collect();
        let duplicate = |(queue, key): (&str, &str)| Error::Duplicate {
            queue: queue.to_owned(),
            dedup_key: key.to_owned(),
        };
        match (keyed.as_slice(), which) {
            ([], _) => return self.error(e),
            ([only], UniqueIndex::DedupKey) => return duplicate(*only),
            _ => {}
        }
        if let Some(pair) = self.live_dedup_key(target, &keyed).await {
            return duplicate(pair);
        }
        match which {
            // The server named the dedup index, but the live key is not visible from here (it
            // was pushed earlier in the caller's own transaction, or has just finished).
            UniqueIndex::DedupKey => duplicate(keyed[0]),
            // No live job holds any of the keys: the clash was on something else (the id).
            _ => self.error(e),
        }
    }

    /// The first of `keyed` (in batch order) that a live job holds, looked up in the caller's
    /// transaction when there is one (falling back to the pool when that transaction can no
    /// longer run statements).
    async fn live_dedup_key<'a>(
        &self,
        target: Target<'_, D::Conn>,
        keyed: &[(&'a str, &'a str)],
    ) -> Option<(&'a str, &'a str)> {
        let queues: Vec<&str> = distinct(keyed.iter().map(|(q, _)| *q));
        let keys: Vec<&str> = distinct(keyed.iter().map(|(_, k)| *k));
        let d = self.driver();
        let live = match target {
            Target::Tx(conn) => match d.job_dedup_live(Target::Tx(conn), &queues, &keys).await {
                Ok(live) => live,
                Err(_) => d.job_dedup_live(Target::Pool, &queues, &keys).await.ok()?,
            },
            Target::Pool => d.job_dedup_live(Target::Pool, &queues, &keys).await.ok()?,
        };
        let live: HashSet<(&str, &str)> =
            live.iter().map(|(q, k)| (q.as_str(), k.as_str())).collect();
        keyed.iter().copied().find(|pair| live.contains(pair))
    }

    // ---------------------------------------------------------------------------------------
    // Claiming

    /// Validates `req` and claims.
    ///
    /// # Errors
    /// As [`Queue::pop`].
    pub async fn pop(&self, req: PopRequest) -> Result<Vec<Leased>> {
        let checked = CheckedPop::new(req, self.limits())?;
        self.pop_checked(&checked).await
    }

    /// Claims with a request that was validated before.
    ///
    /// # Errors
    /// As [`Queue::pop`].
    pub async fn pop_checked(&self, req: &CheckedPop) -> Result<Vec<Leased>> {
        let req = req.request();
        // The request was checked against some queue's limits; this queue's may be tighter.
        validate::pop_limit(req.limit, self.limits())?;
        let p = JobClaim {
            queue: &req.queue,
            limit: req.limit,
            lease: req.lease,
            worker: &req.worker,
            controls_checked: false,
        };
        if self.known_controlled(p.queue) {
            return self.claim_controlled(p).await;
        }
        let mut jobs = match self.inner.caps.claim {
            ClaimStrategy::Optimistic => self.claim_optimistic(p).await?,
            _ => self
                .retried("claim", || self.driver().job_claim(p))
                .await
                .map_err(|e| self.error(e))?,
        };
        if jobs.is_empty() {
            return self.claim_if_controlled(p).await;
        }
        sort_claimed(&mut jobs);
        tracing::trace!(target: LOG_TARGET, queue = %req.queue, claimed = jobs.len(), "pop");
        Ok(jobs)
    }

    /// The optimistic claim: read due candidates without locks, then claim them guarded by
    /// their versions; what others took first is simply not ours. A claimer that lost races
    /// lately reads a wider window of due jobs and tries them in random order, so concurrent
    /// claimers spread out instead of all chasing the head of the queue; an uncontended claimer
    /// keeps the exact claim order.
    async fn claim_optimistic(&self, p: JobClaim<'_>) -> Result<Vec<Leased>> {
        let d = self.driver();
        let contention = &self.inner.contention;
        let mut claimed = Vec::new();
        for _ in 0..OPTIMISTIC_ROUNDS {
            let want = p.limit - claimed.len();
            let contended = contention.load(Ordering::Relaxed) > 0;
            let fetch = if contended { want * 2 + 16 } else { want };
            let mut candidates = d
                .job_candidates(JobClaim { limit: fetch, ..p })
                .await
                .map_err(|e| self.error(e))?;
            if candidates.is_empty() {
                break;
            }
            if contended {
                fastrand::shuffle(&mut candidates);
            }
            candidates.truncate(want);
            let tried = candidates.len();
            let won = match d
                .job_claim_candidates(JobClaim { limit: tried, ..p }, candidates)
                .await
            {
                Ok(won) => won,
                // The statement was rolled back as a whole: nothing of it is ours.
                Err(e) if self.is_lock_conflict(&e) => Vec::new(),
                Err(e) => return Err(self.error(e)),
            };
            let all_won = won.len() == tried;
            claimed.extend(won);
            if all_won {
                // A claimer that stops losing returns to the exact order.
                let _ = contention
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| c.checked_sub(1));
                // Every job tried was won: the limit is reached or nothing more is due.
                break;
            }
            contention.store(CONTENTION_MEMORY, Ordering::Relaxed);
            if claimed.len() >= p.limit {
                break;
            }
        }
        Ok(claimed)
    }

    // ---------------------------------------------------------------------------------------
    // Transitions of a running job, fenced by its lease token

    /// Why a fenced transition of `lease` changed nothing: the job was cancelled, or the lease
    /// is no longer current (also when the job is gone).
    async fn lease_error(&self, target: Target<'_, D::Conn>, lease: &Lease) -> Error {
        match self.driver().job_state(target, lease.job_id).await {
            Ok(Some(JobState::Cancelled)) => Error::Cancelled { job: lease.job_id },
            Ok(_) => Error::LeaseLost { job: lease.job_id },
            Err(e) => self.error(e),
        }
    }

    /// `Ok` when a fenced transition changed its row, else why not.
    async fn fenced(&self, changed: u64, lease: &Lease) -> Result<()> {
        if changed == 0 {
            Err(self.lease_error(Target::Pool, lease).await)
        } else {
            Ok(())
        }
    }

    /// Marks the job completed.
    ///
    /// # Errors
    /// As [`Queue::ack`].
    pub async fn ack(&self, lease: &Lease) -> Result<()> {
        let changed = self
            .retried("ack", || self.driver().job_complete(Target::Pool, lease))
            .await
            .map_err(|e| self.error(e))?;
        self.fenced(changed, lease).await?;
        self.places_freed(std::slice::from_ref(lease)).await;
        Ok(())
    }

    /// Completes the job inside the caller's transaction on `conn`.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] or [`Error::Cancelled`]: nothing was changed and the caller should
    /// roll back its own writes.
    pub async fn complete_in(&self, conn: &mut D::Conn, lease: &Lease) -> Result<()> {
        let changed = self
            .driver()
            .job_complete(Target::Tx(&mut *conn), lease)
            .await
            .map_err(|e| self.error(e))?;
        if changed == 0 {
            return Err(self.lease_error(Target::Tx(conn), lease).await);
        }
        Ok(())
    }

    /// Completes every job whose lease is current.
    ///
    /// # Errors
    /// As [`Queue::ack_batch`].
    pub async fn ack_batch(&self, leases: &[Lease]) -> Result<u64> {
        validate_ack_batch(leases, self.limits())?;
        if leases.is_empty() {
            return Ok(0);
        }
        let done = self
            .retried("ack_batch", || self.driver().job_complete_many(leases))
            .await
            .map_err(|e| self.error(e))?;
        self.places_freed(leases).await;
        Ok(done)
    }

    /// Completes `leases`, then claims with `req`: in one call to the driver where the dialect
    /// can (and the claim strategy is a single statement), else as two.
    ///
    /// # Errors
    /// As [`Queue::ack_batch_and_pop`].
    pub async fn ack_batch_and_pop(
        &self,
        leases: &[Lease],
        req: &CheckedPop,
    ) -> Result<(u64, Result<Vec<Leased>>)> {
        validate_ack_batch(leases, self.limits())?;
        let single_statement_claim = self.inner.caps.claim != ClaimStrategy::Optimistic;
        let r = req.request();
        if !leases.is_empty() && single_statement_claim && !self.known_controlled(&r.queue) {
            validate::pop_limit(r.limit, self.limits())?;
            let p = JobClaim {
                queue: &r.queue,
                limit: r.limit,
                lease: r.lease,
                worker: &r.worker,
                controls_checked: false,
            };
            let combined = self
                .retried("ack_batch_and_pop", || {
                    self.driver().job_complete_and_claim(leases, p)
                })
                .await
                .map_err(|e| self.error(e))?;
            if let Some((acked, mut jobs)) = combined {
                if jobs.is_empty() {
                    return Ok((acked, self.claim_if_controlled(p).await));
                }
                sort_claimed(&mut jobs);
                return Ok((acked, Ok(jobs)));
            }
        }
        let acked = self.ack_batch(leases).await?;
        Ok((acked, self.pop_checked(req).await))
    }

    /// Records a failure as the retry policy decides.
    ///
    /// # Errors
    /// As [`Queue::fail`].
    pub async fn fail(&self, lease: &Lease, failure: Failure) -> Result<FailOutcome> {
        let error = validate::error_text(&failure.message);
        let d = self.driver();
        match self.inner.retry_policy.decide(lease, &failure) {
            FailDecision::Retry(delay) => {
                let p = JobFailRetry {
                    lease,
                    delay,
                    error: &error,
                };
                let changed = self
                    .retried("fail", || d.job_fail_retry(p))
                    .await
                    .map_err(|e| self.error(e))?;
                self.fenced(changed, lease).await?;
                if delay.is_zero() {
                    self.wake(&lease.queue, 1).await;
                } else {
                    self.places_freed(std::slice::from_ref(lease)).await;
                }
                Ok(FailOutcome::Retrying { after: delay })
            }
            FailDecision::Dead => {
                let p = JobFailDead {
                    lease,
                    error: &error,
                };
                let changed = self
                    .retried("fail", || d.job_fail_dead(p))
                    .await
                    .map_err(|e| self.error(e))?;
                self.fenced(changed, lease).await?;
                self.places_freed(std::slice::from_ref(lease)).await;
                Ok(FailOutcome::Dead)
            }
        }
    }

    /// Moves the lease's expiry to `by` from now.
    ///
    /// # Errors
    /// As [`Queue::extend`].
    pub async fn extend(&self, lease: &Lease, by: Duration) -> Result<Lease> {
        validate::lease("by", by)?;
        let expires = self
            .retried("extend", || self.driver().job_extend(lease, by))
            .await
            .map_err(|e| self.error(e))?;
        match expires {
            Some(expires_at) => Ok(Lease {
                expires_at,
                ..lease.clone()
            }),
            None => Err(self.lease_error(Target::Pool, lease).await),
        }
    }

    /// Gives the job back unstarted.
    ///
    /// # Errors
    /// As [`Queue::release`].
    pub async fn release(&self, lease: &Lease) -> Result<()> {
        let changed = self
            .retried("release", || self.driver().job_release(lease))
            .await
            .map_err(|e| self.error(e))?;
        self.fenced(changed, lease).await?;
        self.wake(&lease.queue, 1).await;
        Ok(())
    }

    /// Returns expired leases to pending, or dead when their attempts are used up.
    ///
    /// # Errors
    /// As [`Queue::rescue_expired`].
    pub async fn rescue_expired(&self) -> Result<u64> {
        let d = self.driver();
        let mut total = 0;
        loop {
            let expired = self
                .retried("rescue", || d.job_expired(RESCUE_CHUNK))
                .await
                .map_err(|e| self.error(e))?;
            if expired.is_empty() {
                break;
            }
            let (retry, dead): (Vec<&Expired>, Vec<&Expired>) =
                expired.iter().partition(|x| x.attempts < x.max_attempts);
            let mut round = 0;
            for (jobs, to_dead) in [(&retry, false), (&dead, true)] {
                if jobs.is_empty() {
                    continue;
                }
                let ids: Vec<_> = jobs.iter().map(|x| (x.id, x.token)).collect();
                let p = JobRescue {
                    jobs: &ids,
                    dead: to_dead,
                    error: LEASE_EXPIRED,
                };
                round += self
                    .retried("rescue", || d.job_rescue(p))
                    .await
                    .map_err(|e| self.error(e))?;
            }
            total += round;
            for (queue, n) in count_by(retry.iter().map(|x| x.queue.as_str())) {
                self.wake(queue, n).await;
            }
            // A short read was the last one; a round that moved nothing would only repeat.
            if expired.len() < RESCUE_CHUNK || round == 0 {
                break;
            }
        }
        if total > 0 {
            tracing::info!(target: LOG_TARGET, rescued = total, "rescued jobs with expired leases");
        }
        Ok(total)
    }

    // ---------------------------------------------------------------------------------------
    // Operating on jobs by id

    /// The error for an id-addressed operation that matched no row in an allowed state.
    async fn state_error(&self, id: JobId, operation: &'static str) -> Error {
        match self.driver().job_state(Target::Pool, id).await {
            Ok(None) => Error::NotFound { job: id },
            Ok(Some(state)) => Error::InvalidState {
                job: id,
                state,
                operation,
            },
            Err(e) => self.error(e),
        }
    }

    /// Cancels a pending or running job.
    ///
    /// # Errors
    /// As [`Queue::cancel`].
    pub async fn cancel(&self, id: JobId) -> Result<()> {
        let changed = self
            .retried("cancel", || self.driver().job_cancel(id))
            .await
            .map_err(|e| self.error(e))?;
        if changed == 0 {
            return Err(self.state_error(id, "cancel").await);
        }
        Ok(())
    }

    /// Brings a dead or cancelled job back to pending.
    ///
    /// # Errors
    /// As [`Queue::retry`].
    pub async fn retry(&self, id: JobId) -> Result<()> {
        match self.retried("retry", || self.driver().job_retry(id)).await {
            Ok(Some(queue)) => {
                self.wake(&queue, 1).await;
                Ok(())
            }
            Ok(None) => Err(self.state_error(id, "retry").await),
            Err(e) if matches!(self.driver().classify(&e), DriverFault::UniqueViolation(_)) => {
                match self.get(id).await {
                    Ok(Some(job)) if job.dedup_key.is_some() => Err(Error::Duplicate {
                        queue: job.queue,
                        dedup_key: job.dedup_key.unwrap_or_default(),
                    }),
                    _ => Err(self.error(e)),
                }
            }
            Err(e) => Err(self.error(e)),
        }
    }

    /// Reads one job.
    ///
    /// # Errors
    /// As [`Queue::get`].
    pub async fn get(&self, id: JobId) -> Result<Option<Job>> {
        self.driver().job_get(id).await.map_err(|e| self.error(e))
    }

    /// Lists jobs, newest first.
    ///
    /// # Errors
    /// As [`Queue::list`].
    pub async fn list(&self, req: ListRequest) -> Result<Vec<Job>> {
        req.validate()?;
        self.driver()
            .job_list(&req)
            .await
            .map_err(|e| self.error(e))
    }

    /// Job counts per queue and state.
    ///
    /// # Errors
    /// As [`Queue::stats`].
    pub async fn stats(&self, queue: Option<&str>) -> Result<Vec<QueueStats>> {
        if let Some(q) = queue {
            validate::queue_name(q)?;
        }
        let mut stats = self
            .driver()
            .job_stats(queue)
            .await
            .map_err(|e| self.error(e))?;
        if let (Some(q), true) = (queue, stats.is_empty()) {
            stats.push(QueueStats {
                queue: q.to_owned(),
                ..QueueStats::default()
            });
        }
        self.with_controls(queue, stats).await
    }

    /// Deletes finished jobs, a bounded number per statement.
    ///
    /// # Errors
    /// As [`Queue::prune`].
    pub async fn prune(&self, req: PruneRequest) -> Result<u64> {
        req.validate()?;
        let mut states: Vec<JobState> = Vec::with_capacity(3);
        for s in &req.states {
            if !states.contains(s) {
                states.push(*s);
            }
        }
        let p = JobPrune {
            states: &states,
            older_than: req.older_than,
            queue: req.queue.as_deref(),
            limit: PRUNE_CHUNK,
        };
        let mut total = 0;
        loop {
            let n = self
                .retried("prune", || self.driver().job_prune(p))
                .await
                .map_err(|e| self.error(e))?;
            total += n;
            if n < PRUNE_CHUNK as u64 {
                return Ok(total);
            }
        }
    }

    /// Waits for a wake-up on `queue` or for `timeout`.
    pub async fn wait_for_work(&self, queue: &str, timeout: Duration) {
        self.inner.driver.watch(queue, &self.inner.hub);
        self.inner.hub.wait(queue, timeout).await;
    }

    /// The database's clock.
    ///
    /// # Errors
    /// As [`Queue::now`].
    pub async fn now(&self) -> Result<DateTime<Utc>> {
        self.driver().now().await.map_err(|e| self.error(e))
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

    async fn wait_for_work(&self, queue: &str, timeout: Duration) {
        self.engine().wait_for_work(queue, timeout).await
    }

    async fn now(&self) -> Result<DateTime<Utc>> {
        self.engine().now().await
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
