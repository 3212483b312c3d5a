//! [`Scheduler`]: registers a process's schedules, renews their leases, and fires every active
//! schedule of the database at its slots.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::clock::{Clock, DatabaseClock};
use super::{PeriodicJob, Registration, TickReport, MAX_LEASE, MIN_LEASE};
use crate::error::{Error, Result};
use crate::queue::Queue;

/// The log target of the scheduler.
pub const LOG_TARGET: &str = "queue::scheduler";

/// Longest wait between two ticks (and shortest), and between retries after a database error.
const MAX_POLL: Duration = Duration::from_secs(3600);
const MIN_POLL: Duration = Duration::from_millis(1);
const FIRST_RETRY: Duration = Duration::from_millis(200);

/// Configures a [`Scheduler`]; see [`Scheduler::builder`]. Nothing is checked until
/// [`SchedulerBuilder::build`].
#[must_use = "a builder does nothing until build() and start()"]
pub struct SchedulerBuilder {
    queue: Arc<dyn Queue>,
    jobs: Vec<PeriodicJob>,
    clock: Option<Arc<dyn Clock>>,
    lease: Duration,
    refresh: Option<Duration>,
    poll: Duration,
}

impl SchedulerBuilder {
    /// Registers `job` when the scheduler starts, and keeps it alive while it runs.
    pub fn schedule(mut self, job: PeriodicJob) -> Self {
        self.jobs.push(job);
        self
    }

    /// The clock slots are decided by (default: the database's, [`DatabaseClock`]); tests pass
    /// a [`super::ManualClock`].
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// How long this process's schedules stay registered without a renewal (default 5
    /// minutes): a schedule removed from every process's code stops firing this long after
    /// the last process that had it stopped. 1 second ..= 7 days.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How often the leases are renewed (default a fifth of the lease); at most half the lease.
    pub fn refresh_interval(mut self, every: Duration) -> Self {
        self.refresh = Some(every);
        self
    }

    /// The longest wait between two ticks (default 30 s): how soon schedules added, changed or
    /// removed by other processes and operators are seen. A scheduler also ticks at every slot
    /// of the schedules it knows.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll = every;
        self
    }

    /// Checks every schedule against the queue's limits and the scheduler's settings.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field: `schedules[i].<field>` for a schedule (a name
    /// given twice is `schedules[i].name`), `lease`, `refresh_interval` or `poll_interval`.
    pub fn build(self) -> Result<Scheduler> {
        let limits = &self.queue.capabilities().limits;
        let mut names = HashSet::new();
        for (i, job) in self.jobs.iter().enumerate() {
            job.validate(limits)
                .map_err(|e| e.in_field(&format!("schedules[{i}]")))?;
            if !names.insert(job.name()) {
                return Err(Error::invalid(
                    format!("schedules[{i}].name"),
                    format!("must be unique; {:?} is added twice", job.name()),
                ));
            }
        }
        if !(MIN_LEASE..=MAX_LEASE).contains(&self.lease) {
            return Err(Error::invalid(
                "lease",
                "must be between 1 second and 7 days",
            ));
        }
        let refresh = self.refresh.unwrap_or(self.lease / 5);
        if refresh.is_zero() || refresh > self.lease / 2 {
            return Err(Error::invalid(
                "refresh_interval",
                format!(
                    "must be more than zero and at most half the lease ({:?}), so a lease is renewed before it runs out",
                    self.lease
                ),
            ));
        }
        if !(MIN_POLL..=MAX_POLL).contains(&self.poll) {
            return Err(Error::invalid(
                "poll_interval",
                "must be between 1 ms and 1 hour",
            ));
        }
        let clock = self
            .clock
            .unwrap_or_else(|| Arc::new(DatabaseClock::new(self.queue.clone())));
        Ok(Scheduler {
            queue: self.queue,
            jobs: self.jobs,
            clock,
            lease: self.lease,
            refresh,
            poll: self.poll,
        })
    }
}

/// Fires the schedules of a queue's database at their slots: registers this process's
/// schedules at start, renews their leases, and at every tick pushes the due slots of every
/// active schedule (this process's, other processes', and operators'), each slot exactly once
/// across every process running a scheduler. See the [module docs](super).
///
/// ```no_run
/// # use std::sync::Arc;
/// # async fn example(queue: Arc<dyn dbqueue::Queue>) -> dbqueue::Result<()> {
/// use dbqueue::periodic::{Misfire, PeriodicJob, Scheduler};
///
/// let scheduler = Scheduler::builder(queue.clone())
///     .schedule(
///         PeriodicJob::new("nightly-report", "30 2 * * *", "reports", &serde_json::json!({}))?
///             .time_zone("Europe/Berlin")
///             .misfire(Misfire::CatchUp { max: 3 }),
///     )
///     .build()?;
/// let handle = scheduler.start();
/// // ... run workers ...
/// handle.shutdown().await;
/// # Ok(())
/// # }
/// ```
pub struct Scheduler {
    queue: Arc<dyn Queue>,
    jobs: Vec<PeriodicJob>,
    clock: Arc<dyn Clock>,
    lease: Duration,
    refresh: Duration,
    poll: Duration,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("jobs", &self.jobs)
            .field("lease", &self.lease)
            .field("refresh", &self.refresh)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

/// What a running scheduler has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedulerProgress {
    /// Ticks completed.
    pub ticks: u64,
    /// The clock's time at the last completed tick.
    pub last_tick: Option<DateTime<Utc>>,
    /// Slots this scheduler enqueued.
    pub enqueued: u64,
    /// Schedule firings that found their due slots enqueued by another process first.
    pub lost: u64,
    /// Ticks or schedules that failed (logged).
    pub failures: u64,
}

impl Scheduler {
    /// Starts configuring a scheduler on `queue`.
    pub fn builder(queue: Arc<dyn Queue>) -> SchedulerBuilder {
        SchedulerBuilder {
            queue,
            jobs: Vec::new(),
            clock: None,
            lease: Duration::from_secs(300),
            refresh: None,
            poll: Duration::from_secs(30),
        }
    }

    /// The schedules this process registers.
    pub fn jobs(&self) -> &[PeriodicJob] {
        &self.jobs
    }

    /// Writes this process's schedules (created, or changed where the stored definition
    /// differs), each with a fresh lease.
    ///
    /// # Errors
    /// The first registration's error (the others are still tried).
    pub async fn register(&self) -> Result<()> {
        let now = self.clock.now().await?;
        self.register_at(now).await
    }

    async fn register_at(&self, now: DateTime<Utc>) -> Result<()> {
        let mut first = None;
        for job in &self.jobs {
            let how = Registration::Code { lease: self.lease };
            match self.queue.schedule_register(job, how, now).await {
                Ok(what) => {
                    tracing::debug!(target: LOG_TARGET, schedule = job.name(), ?what, "registered")
                }
                Err(e) => {
                    tracing::warn!(target: LOG_TARGET, schedule = job.name(), error = %e, "could not register the schedule");
                    first.get_or_insert(e);
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Renews the leases of this process's schedules (re-registering one that was removed
    /// meanwhile), without rewriting their definitions.
    ///
    /// # Errors
    /// The first renewal's error (the others are still tried).
    pub async fn refresh(&self) -> Result<()> {
        let now = self.clock.now().await?;
        self.refresh_at(now).await
    }

    async fn refresh_at(&self, now: DateTime<Utc>) -> Result<()> {
        let mut first = None;
        for job in &self.jobs {
            if let Err(e) = self.queue.schedule_refresh(job, self.lease, now).await {
                tracing::warn!(target: LOG_TARGET, schedule = job.name(), error = %e, "could not renew the schedule's lease");
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// One pass at the clock's time: enqueues the due slots of every active schedule.
    ///
    /// # Errors
    /// When the clock or the schedules cannot be read.
    pub async fn tick(&self) -> Result<TickReport> {
        let now = self.clock.now().await?;
        self.queue.schedule_tick(now).await
    }

    /// Spawns the scheduler on the current Tokio runtime: it registers this process's
    /// schedules, then ticks at every slot (and at least every poll interval) and renews its
    /// leases, retrying after database errors, until the handle is shut down or dropped.
    ///
    /// # Panics
    /// When called outside a Tokio runtime.
    pub fn start(self) -> SchedulerHandle {
        let (stop_tx, stop_rx) = watch::channel(false);
        let (progress_tx, progress_rx) = watch::channel(SchedulerProgress::default());
        tracing::info!(target: LOG_TARGET, code_schedules = self.jobs.len(), "scheduler started");
        let task = tokio::spawn(run(self, stop_rx, progress_tx));
        SchedulerHandle {
            stop: stop_tx,
            progress: progress_rx,
            task,
        }
    }

    /// Runs until `signal` completes (e.g. `tokio::signal::ctrl_c()`), then stops.
    ///
    /// # Panics
    /// When called outside a Tokio runtime.
    pub async fn run_until<F: Future>(self, signal: F) {
        let handle = self.start();
        signal.await;
        handle.shutdown().await;
    }
}

/// Waits `pause` (real time) or until stopped; true when stopped.
async fn pause(stop: &mut watch::Receiver<bool>, pause: Duration) -> bool {
    tokio::select! {
        biased;
        _ = stop.wait_for(|s| *s) => true,
        _ = tokio::time::sleep(pause) => false,
    }
}

async fn run(
    s: Scheduler,
    mut stop: watch::Receiver<bool>,
    progress: watch::Sender<SchedulerProgress>,
) {
    let mut registered = s.jobs.is_empty();
    let mut next_refresh: Option<DateTime<Utc>> = None;
    let mut retry = FIRST_RETRY;
    let refresh = chrono::Duration::from_std(s.refresh).unwrap_or(chrono::Duration::MAX);
    let poll = chrono::Duration::from_std(s.poll).unwrap_or(chrono::Duration::MAX);
    loop {
        if *stop.borrow() {
            break;
        }
        let read_at = tokio::time::Instant::now();
        let now = match s.clock.now().await {
            Ok(now) => now,
            Err(e) => {
                tracing::warn!(target: LOG_TARGET, error = %e, "cannot read the clock; trying again");
                progress.send_modify(|p| p.failures += 1);
                if pause(&mut stop, retry).await {
                    break;
                }
                retry = (retry * 2).min(s.poll.max(FIRST_RETRY));
                continue;
            }
        };
        let mut healthy = true;
        if !registered {
            match s.register_at(now).await {
                Ok(()) => {
                    registered = true;
                    next_refresh = now.checked_add_signed(refresh);
                }
                Err(_) => healthy = false,
            }
        } else if next_refresh.is_some_and(|r| now >= r) {
            match s.refresh_at(now).await {
                Ok(()) => next_refresh = now.checked_add_signed(refresh),
                Err(_) => healthy = false,
            }
        }
        let mut wake = now.checked_add_signed(poll).unwrap_or(now);
        match s.queue.schedule_tick(now).await {
            Ok(report) => {
                for (name, why) in &report.failed {
                    tracing::warn!(target: LOG_TARGET, schedule = %name, error = %why, "could not fire the schedule");
                }
                for (name, slot, job) in &report.enqueued {
                    tracing::info!(target: LOG_TARGET, schedule = %name, %slot, %job, "enqueued a slot");
                }
                healthy &= report.failed.is_empty();
                progress.send_modify(|p| {
                    p.ticks += 1;
                    p.last_tick = Some(now);
                    p.enqueued += report.enqueued.len() as u64;
                    p.lost += report.lost as u64;
                    p.failures += report.failed.len() as u64;
                });
                if let Some(next) = report.next_slot {
                    wake = wake.min(next);
                }
            }
            Err(e) => {
                tracing::warn!(target: LOG_TARGET, error = %e, "tick failed; trying again");
                progress.send_modify(|p| p.failures += 1);
                healthy = false;
            }
        }
        if let Some(r) = next_refresh {
            wake = wake.min(r);
        }
        if healthy {
            retry = FIRST_RETRY;
        } else {
            // Something failed: try again soon (real time), but not in a tight loop.
            if pause(&mut stop, retry).await {
                break;
            }
            retry = (retry * 2).min(s.poll.max(FIRST_RETRY));
            continue;
        }
        // The clock has moved on while this tick ran: wait from where it is now.
        let ran = chrono::Duration::from_std(read_at.elapsed()).unwrap_or_default();
        let now_estimate = now.checked_add_signed(ran).unwrap_or(now);
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            _ = s.clock.sleep_until(now_estimate, wake) => {}
        }
    }
    tracing::info!(target: LOG_TARGET, "scheduler stopped");
}

/// Controls a running [`Scheduler`]. Dropping it stops the scheduler.
#[derive(Debug)]
pub struct SchedulerHandle {
    stop: watch::Sender<bool>,
    progress: watch::Receiver<SchedulerProgress>,
    task: JoinHandle<()>,
}

impl SchedulerHandle {
    /// What it has done so far.
    pub fn progress(&self) -> SchedulerProgress {
        *self.progress.borrow()
    }

    /// Waits until a tick at a clock time at or after `at` has completed (for tests that move
    /// a [`super::ManualClock`]); returns at once when the scheduler has stopped.
    pub async fn ticked(&self, at: DateTime<Utc>) {
        let mut rx = self.progress.clone();
        let _ = rx.wait_for(|p| p.last_tick.is_some_and(|t| t >= at)).await;
    }

    /// Whether it has stopped.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops it: a tick in progress completes first (its transactions are never cut short).
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        if let Err(e) = self.task.await {
            tracing::error!(target: LOG_TARGET, error = %e, "scheduler task failed");
        }
    }
}
