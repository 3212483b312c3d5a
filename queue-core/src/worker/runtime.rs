//! The worker's tasks: the dispatchers that pop, one task per running job, the acknowledging
//! task, the rescuer, and the supervisor that shuts them down in order.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::cancel::CancelReason;
use super::counters::{Counters, ShutdownReport};
use super::events::{EventHub, JobEvent, Transition};
use super::handler::{JobContext, JobError, LeaseCell};
use super::registry::{Registry, Route};
use super::{Config, QueueConfig, LOG_TARGET};
use crate::error::{Error, Result};
use crate::job::{FailOutcome, Failure, FailureKind, JobId, Lease, Leased, Snooze, SnoozeOutcome};
use crate::metrics::JobMetrics;
use crate::queue::Queue;
use std::collections::HashMap;

use super::dispatch::{dispatch, Buffered};

/// How many times a failed `fail`, `release` or `ack_batch` is retried when the database was
/// unreachable, and the first pause between tries (doubling).
const TRANSITION_TRIES: u32 = 4;
const TRANSITION_BACKOFF: Duration = Duration::from_millis(100);
/// How many jobs claimed at shutdown are released at once.
const RELEASE_CONCURRENCY: usize = 16;

/// What the tasks share.
pub(super) struct Shared {
    pub(super) queue: Arc<dyn Queue>,
    pub(super) registry: Arc<Registry>,
    pub(super) config: Config,
    pub(super) counters: Arc<Counters>,
    pub(super) acks: AckQueue,
    /// Becomes true when running handlers must stop (the shutdown deadline passed).
    pub(super) abort: watch::Receiver<bool>,
    /// Becomes true when the shutdown begins (running handlers are told).
    pub(super) stopping: watch::Receiver<bool>,
    /// The running jobs, where a cancel's notification can reach the worker
    /// ([`crate::wake::CANCEL_WAKE`]); `None` elsewhere.
    pub(super) running: Option<std::sync::Mutex<HashMap<JobId, Arc<LeaseCell>>>>,
    /// True once the cancel watcher listens: a handler starts only then, so an operator's
    /// cancel sent right after it started cannot find nobody listening (with `running`).
    pub(super) cancel_watch: watch::Sender<bool>,
    /// Handlers stopped at the deadline.
    pub(super) aborted: AtomicU64,
    /// The metric handles of the queues and kinds this worker ran.
    pub(super) metrics: crate::metrics::Handles,
    /// The claim sizes its dispatchers use now, together: the acknowledger's batch follows it.
    pub(super) claiming: std::sync::atomic::AtomicUsize,
    /// The job events' subscribers.
    pub(super) events: EventHub,
    /// Its queues (changed through the handle at runtime).
    pub(super) lanes: std::sync::Mutex<Lanes>,
    /// The slots of every queue, together.
    pub(super) slots: std::sync::atomic::AtomicUsize,
}

impl Shared {
    /// Counts `n` jobs whose lease was lost, in the counters and in `queue`'s metric (`None`:
    /// a batch of acknowledgements of several queues, whose lost ones are not known apart; the
    /// metric's queue label is then empty).
    pub(super) fn lease_lost(&self, queue: Option<&str>, n: u64) {
        self.counters.add_lease_lost(n);
        self.metrics.lease_lost(queue.unwrap_or("")).increment(n);
    }

    /// One job whose lease is gone (`e` is [`Error::Cancelled`] or [`Error::LeaseLost`]):
    /// counted and reported as an event.
    pub(super) fn lost_one(
        &self,
        lease: &Lease,
        kind: Option<&str>,
        ran: Option<Duration>,
        e: &Error,
    ) {
        self.lease_lost(Some(&lease.queue), 1);
        let transition = match e {
            Error::Cancelled { .. } => Transition::Cancelled,
            _ => Transition::LeaseLost,
        };
        self.events
            .emit(|| JobEvent::new(transition, lease, kind, ran, Some(e.to_string())));
    }

    /// Starts serving the queue of `config`: its slots and its dispatcher.
    pub(super) fn add_lane(self: &Arc<Self>, config: QueueConfig) -> Result<()> {
        let mut lanes = lock(&self.lanes);
        if lanes.closed {
            return Err(Error::invalid("queue", "the worker is shutting down"));
        }
        if lanes.list.iter().any(|(l, _)| l.config.name == config.name) {
            return Err(Error::invalid(
                "queue",
                format!("{:?} is served by this worker already", config.name),
            ));
        }
        let lane = Arc::new(Lane::new(config));
        self.slots.fetch_add(lane.concurrency(), Ordering::SeqCst);
        tracing::info!(
            target: LOG_TARGET,
            queue = %lane.config.name,
            worker = %self.config.worker_id,
            concurrency = lane.concurrency(),
            prefetch = lane.config.prefetch,
            "worker started"
        );
        let (s, l, stop) = (self.clone(), lane.clone(), lane.stop.subscribe());
        let dispatcher = spawn_restarting(self, "dispatcher", move || {
            dispatch(s.clone(), l.clone(), stop.clone())
        });
        lanes.list.push((lane, Some(dispatcher)));
        Ok(())
    }

    /// Every queue served now (or being removed).
    pub(super) fn lanes(&self) -> Vec<Arc<Lane>> {
        lock(&self.lanes)
            .list
            .iter()
            .map(|(l, _)| l.clone())
            .collect()
    }

    /// The queue named `name`.
    pub(super) fn lane(&self, name: &str) -> Result<Arc<Lane>> {
        lock(&self.lanes)
            .list
            .iter()
            .find(|(l, _)| l.config.name == name && !l.removed.load(Ordering::SeqCst))
            .map(|(l, _)| l.clone())
            .ok_or_else(|| not_served(name))
    }

    /// Marks the queue `name` as being removed, and hands over its dispatcher.
    pub(super) fn take_lane(&self, name: &str) -> Result<(Arc<Lane>, Option<JoinHandle<()>>)> {
        let mut lanes = lock(&self.lanes);
        if lanes.closed {
            return Err(Error::invalid("queue", "the worker is shutting down"));
        }
        let served = lanes
            .list
            .iter()
            .filter(|(l, _)| !l.removed.load(Ordering::SeqCst))
            .count();
        let Some((lane, dispatcher)) = lanes
            .list
            .iter_mut()
            .find(|(l, _)| l.config.name == name && !l.removed.load(Ordering::SeqCst))
        else {
            return Err(not_served(name));
        };
        if served == 1 {
            return Err(Error::invalid(
                "queue",
                format!("{name:?} is the worker's last queue; shut the worker down instead"),
            ));
        }
        lane.removed.store(true, Ordering::SeqCst);
        self.slots.fetch_sub(lane.concurrency(), Ordering::SeqCst);
        Ok((lane.clone(), dispatcher.take()))
    }

    /// Forgets a removed queue.
    pub(super) fn forget_lane(&self, lane: &Arc<Lane>) {
        lock(&self.lanes)
            .list
            .retain(|(l, _)| !Arc::ptr_eq(l, lane));
    }
}

fn not_served(name: &str) -> Error {
    Error::invalid("queue", format!("{name:?} is not served by this worker"))
}

/// The one queue of `leases`, if they are all of one.
pub(super) fn one_queue(leases: &[Lease]) -> Option<&str> {
    let first = leases.first()?.queue.as_str();
    leases.iter().all(|l| l.queue == first).then_some(first)
}

/// One queue of the worker: its settings, its handler slots, and how long its jobs hold a
/// slot (which sizes its claims).
pub(super) struct Lane {
    /// Its settings (`concurrency`: the one it started with).
    pub(super) config: QueueConfig,
    /// How many of its jobs may run at once now.
    slots: std::sync::atomic::AtomicUsize,
    pub(super) permits: Arc<Semaphore>,
    pub(super) pace: Pace,
    /// Stops its dispatcher: the worker's shutdown, or the queue's removal.
    pub(super) stop: watch::Sender<bool>,
    /// Stops its running handlers (their jobs are released).
    pub(super) abort: watch::Sender<bool>,
    /// Being removed: no longer found by its name.
    pub(super) removed: std::sync::atomic::AtomicBool,
}

impl Lane {
    fn new(config: QueueConfig) -> Self {
        Lane {
            slots: std::sync::atomic::AtomicUsize::new(config.concurrency),
            permits: Arc::new(Semaphore::new(config.concurrency)),
            config,
            pace: Pace::default(),
            stop: watch::channel(false).0,
            abort: watch::channel(false).0,
            removed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// How many of its jobs may run at once now.
    pub(super) fn concurrency(&self) -> usize {
        self.slots.load(Ordering::SeqCst)
    }

    /// Runs at most `n` of its jobs at once from now on. Slots added are free at once; slots
    /// taken away are taken as running jobs give theirs back, before any other job of the
    /// queue starts (the semaphore serves waiters in order).
    pub(super) fn resize(&self, shared: &Shared, n: usize) {
        let old = self.slots.swap(n, Ordering::SeqCst);
        if n > old {
            shared.slots.fetch_add(n - old, Ordering::SeqCst);
            self.permits.add_permits(n - old);
        } else if n < old {
            shared.slots.fetch_sub(old - n, Ordering::SeqCst);
            let (permits, fewer) = (self.permits.clone(), (old - n) as u32);
            tokio::spawn(async move {
                if let Ok(taken) = permits.acquire_many_owned(fewer).await {
                    taken.forget();
                }
            });
        }
    }
}

/// The queues of a worker, and their dispatchers.
#[derive(Default)]
pub(super) struct Lanes {
    /// The shutdown took them: no queue is added or removed any more.
    closed: bool,
    list: Vec<(Arc<Lane>, Option<JoinHandle<()>>)>,
}

/// How long a job of a lane holds its slot, as a mean of the recent runs (weighted towards the
/// newest: each run moves it an eighth of the way). Read and written without a lock: two
/// runs finishing at once may each count only the other's, which moves the mean just as well.
#[derive(Debug, Default)]
pub(super) struct Pace {
    mean_ns: AtomicU64,
}

impl Pace {
    /// Takes in one run.
    pub(super) fn record(&self, held: Duration) {
        let ns = u64::try_from(held.as_nanos()).unwrap_or(u64::MAX).max(1);
        let old = self.mean_ns.load(Ordering::Relaxed);
        let new = if old == 0 { ns } else { old - old / 8 + ns / 8 };
        self.mean_ns.store(new.max(1), Ordering::Relaxed);
    }

    /// The mean, `None` before the first run.
    pub(super) fn mean(&self) -> Option<Duration> {
        match self.mean_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }
}

/// Completed jobs waiting to be acknowledged: by the acknowledger (in batches), or by the
/// dispatcher together with its next claim.
#[derive(Default)]
pub(super) struct AckQueue {
    pending: std::sync::Mutex<Vec<Lease>>,
    arrived: tokio::sync::Notify,
    stopping: std::sync::atomic::AtomicBool,
    /// The dispatcher has nothing to claim until a place frees up or work arrives: the waiting
    /// completions are sent at once instead of lingering for more.
    hurry: std::sync::atomic::AtomicBool,
}

impl AckQueue {
    /// Queues a completed job's lease.
    pub(super) fn push(&self, lease: Lease) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(lease);
        self.arrived.notify_one();
    }

    /// Puts back leases whose acknowledgement failed without changing anything.
    pub(super) fn put_back(&self, leases: Vec<Lease>) {
        if leases.is_empty() {
            return;
        }
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(leases);
        self.arrived.notify_one();
    }

    /// Takes up to `max` leases, oldest first.
    pub(super) fn take(&self, max: usize) -> Vec<Lease> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let n = pending.len().min(max);
        self.hurry.store(false, Ordering::SeqCst);
        pending.drain(..n).collect()
    }

    /// Asks for the waiting completions to be sent now, if there are any: the dispatcher found
    /// nothing to claim, and on a queue with a concurrency limit these completions are what
    /// frees the places it waits for.
    pub(super) fn hurry(&self) {
        if self.len() > 0 && !self.hurry.swap(true, Ordering::SeqCst) {
            self.arrived.notify_one();
        }
    }

    fn is_hurried(&self) -> bool {
        self.hurry.load(Ordering::SeqCst)
    }

    /// How many leases wait.
    pub(super) fn len(&self) -> usize {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Tells the acknowledger to flush everything and stop.
    fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.arrived.notify_one();
    }

    fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

/// Controls a running worker: read its counters, shut it down.
///
/// Dropping the handle without calling [`WorkerHandle::shutdown`] shuts the worker down in the
/// background with its configured `shutdown_timeout`.
pub struct WorkerHandle {
    pub(super) shared: Arc<Shared>,
    counters: Arc<Counters>,
    events: EventHub,
    shutdown: Option<oneshot::Sender<Duration>>,
    supervisor: JoinHandle<ShutdownReport>,
    /// The scheduler attached with `WorkerBuilder::scheduler`; stopped first at shutdown.
    pub(super) scheduler: Option<crate::periodic::SchedulerHandle>,
}

impl std::fmt::Debug for WorkerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerHandle")
            .field("counters", &self.counters)
            .field("scheduler", &self.scheduler)
            .finish_non_exhaustive()
    }
}

impl WorkerHandle {
    /// The worker's live counters.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// Subscribes to the events of the jobs the worker runs from now on, as
    /// [`Worker::events`](super::Worker::events) does before the start.
    pub fn events(&self) -> super::Events {
        self.events.subscribe()
    }

    /// Whether the worker has stopped (after a shutdown, or because its tasks ended).
    pub fn is_finished(&self) -> bool {
        self.supervisor.is_finished()
    }

    /// Shuts down gracefully: stops popping at once, waits for the claims in flight and
    /// releases claimed jobs that have not started, lets running handlers finish until
    /// `deadline` has passed, then stops them and releases their jobs, and finally flushes
    /// pending acks. The database calls that settle claimed jobs may outlast `deadline` (up to
    /// 5 s after the handlers have stopped, when the database does not answer).
    pub async fn shutdown(mut self, deadline: Duration) -> ShutdownReport {
        if let Some(scheduler) = self.scheduler.take() {
            scheduler.shutdown().await;
        }
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(deadline);
        }
        let counters = self.counters.clone();
        match (&mut self.supervisor).await {
            Ok(report) => report,
            Err(e) => {
                tracing::error!(target: LOG_TARGET, error = %e, "worker supervisor failed");
                ShutdownReport {
                    counters: counters.snapshot(),
                    aborted: 0,
                    elapsed: Duration::ZERO,
                }
            }
        }
    }
}

pub(super) fn start(
    queue: Arc<dyn Queue>,
    registry: Arc<Registry>,
    config: Config,
    events: EventHub,
) -> WorkerHandle {
    let counters = Arc::new(Counters::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let (abort_tx, abort_rx) = watch::channel(false);
    let (shutdown_tx, shutdown_rx) = oneshot::channel();
    let notified = queue.capabilities().wakeups == crate::queue::Wakeups::ListenNotify;
    let shared = Arc::new(Shared {
        queue,
        registry,
        config,
        counters: counters.clone(),
        acks: AckQueue::default(),
        abort: abort_rx,
        stopping: stop_rx.clone(),
        running: notified.then(Default::default),
        cancel_watch: watch::Sender::new(false),
        aborted: AtomicU64::new(0),
        metrics: crate::metrics::Handles::default(),
        claiming: std::sync::atomic::AtomicUsize::new(0),
        events: events.clone(),
        lanes: std::sync::Mutex::new(Lanes::default()),
        slots: std::sync::atomic::AtomicUsize::new(0),
    });
    for q in shared.config.queues.clone() {
        if let Err(e) = shared.add_lane(q) {
            tracing::error!(target: LOG_TARGET, error = %e, "cannot serve a queue");
        }
    }
    let acker = {
        let s = shared.clone();
        spawn_restarting(&shared, "acknowledger", move || acker(s.clone()))
    };
    let rescuer = shared.config.rescue_interval.map(|every| {
        let (s, stop) = (shared.clone(), stop_rx.clone());
        spawn_restarting(&shared, "rescuer", move || {
            rescue(s.clone(), every, stop.clone())
        })
    });
    let retainer = shared.config.retention.clone().map(|rules| {
        let (s, stop) = (shared.clone(), stop_rx.clone());
        spawn_restarting(&shared, "retention", move || {
            retain(s.clone(), rules.clone(), stop.clone())
        })
    });
    let sampler = shared.config.queue_gauges.map(|every| {
        let (s, stop) = (shared.clone(), stop_rx.clone());
        // One holder id for the worker's life, so that it keeps the lease it holds.
        let holder = uuid::Uuid::new_v4();
        spawn_restarting(&shared, "gauge sampler", move || {
            sample_gauges(s.clone(), every, holder, stop.clone())
        })
    });
    let cancels = shared.running.is_some().then(|| {
        let (s, stop) = (shared.clone(), stop_rx.clone());
        spawn_restarting(&shared, "cancel watcher", move || {
            watch_cancels(s.clone(), stop.clone())
        })
    });
    let shared_for_handle = shared.clone();
    let supervisor = tokio::spawn(supervise(
        shared,
        shutdown_rx,
        stop_tx,
        abort_tx,
        Tasks {
            acker,
            rescuer,
            retainer,
            sampler,
            cancels,
        },
    ));
    WorkerHandle {
        shared: shared_for_handle,
        counters,
        events,
        shutdown: Some(shutdown_tx),
        supervisor,
        scheduler: None,
    }
}

/// Spawns one of the worker's own loops (claims, acknowledgements, rescue) and starts it again
/// whenever it panics, after a pause that doubles up to 5 s. The loops do not panic by
/// themselves, but code they call can: a tracing subscriber whose writer fails (the standard
/// formatter panics when even its report of the failure cannot reach standard error, as on a
/// full disk), or a `Queue` implementation with a bug. Without this, the loop's task would end
/// silently and leave a worker that looks alive and never claims again. Whatever the loop held
/// when it panicked (jobs claimed but not started) comes back through lease expiry and rescue.
fn spawn_restarting<F, Fut>(shared: &Arc<Shared>, name: &'static str, start: F) -> JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let shared = shared.clone();
    tokio::spawn(async move {
        let mut pause = RESTART_PAUSE_MIN;
        loop {
            match AssertUnwindSafe(start()).catch_unwind().await {
                Ok(()) => return,
                Err(payload) => {
                    shared.counters.add_restarted(1);
                    let message = panic_message(payload.as_ref());
                    // The report itself may be what panics (a failing log writer): it must not
                    // take the restart down with it.
                    let queue = shared.config.queue_names();
                    let queue = queue.as_str();
                    let _ = std::panic::catch_unwind(|| {
                        tracing::error!(
                            target: LOG_TARGET,
                            queue,
                            task = name,
                            panic = %message,
                            restart_in_ms = pause.as_millis() as u64,
                            "a worker task panicked; starting it again"
                        );
                    });
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(RESTART_PAUSE_MAX);
                }
            }
        }
    })
}

/// The first and the longest pause before a panicked worker task starts again.
const RESTART_PAUSE_MIN: Duration = Duration::from_millis(100);
const RESTART_PAUSE_MAX: Duration = Duration::from_secs(5);

struct Tasks {
    acker: JoinHandle<()>,
    rescuer: Option<JoinHandle<()>>,
    retainer: Option<JoinHandle<()>>,
    sampler: Option<JoinHandle<()>>,
    cancels: Option<JoinHandle<()>>,
}

/// Waits for the shutdown request (or the handle's drop), then stops everything in order.
async fn supervise(
    shared: Arc<Shared>,
    request: oneshot::Receiver<Duration>,
    stop: watch::Sender<bool>,
    abort: watch::Sender<bool>,
    tasks: Tasks,
) -> ShutdownReport {
    let grace = request.await.unwrap_or(shared.config.shutdown_timeout);
    let started = Instant::now();
    let deadline = started + grace;
    tracing::info!(
        target: LOG_TARGET,
        queue = %shared.config.queue_names(),
        grace_ms = grace.as_millis() as u64,
        "worker shutting down"
    );
    let _ = stop.send(true);
    let (lanes, dispatchers) = {
        let mut taken = lock(&shared.lanes);
        taken.closed = true;
        let lanes: Vec<Arc<Lane>> = taken.list.iter().map(|(l, _)| l.clone()).collect();
        let dispatchers: Vec<JoinHandle<()>> = taken
            .list
            .iter_mut()
            .filter_map(|(_, d)| d.take())
            .collect();
        (lanes, dispatchers)
    };
    for lane in &lanes {
        let _ = lane.stop.send_replace(true);
    }
    if let Some(rescuer) = tasks.rescuer {
        join_by(rescuer, deadline, "rescuer").await;
    }
    if let Some(retainer) = tasks.retainer {
        join_by(retainer, deadline, "retention").await;
    }
    if let Some(sampler) = tasks.sampler {
        join_by(sampler, deadline, "gauge sampler").await;
    }
    if let Some(cancels) = tasks.cancels {
        join_by(cancels, deadline, "cancel watcher").await;
    }
    // Every slot of every queue back: no handler runs any more.
    let all_slots = || {
        futures::future::join_all(lanes.iter().map(|lane| {
            lane.permits
                .clone()
                .acquire_many_owned(lane.concurrency() as u32)
        }))
    };
    let drained = tokio::time::timeout_at(deadline, all_slots()).await;
    if drained.is_err() {
        let running: usize = lanes
            .iter()
            .map(|l| {
                l.concurrency()
                    .saturating_sub(l.permits.available_permits())
            })
            .sum();
        tracing::warn!(
            target: LOG_TARGET,
            queue = %shared.config.queue_names(),
            running,
            "shutdown deadline passed; stopping running handlers and releasing their jobs"
        );
        let _ = abort.send(true);
        for lane in &lanes {
            let _ = lane.abort.send_replace(true);
        }
        // Each stopped job task releases its job before giving back its slot.
        let _ = all_slots().await;
    }
    drop(drained);
    // A dispatcher returns once its claims in flight have come back and every job it holds
    // unstarted is released. Those calls carry completions and leases: the handlers'
    // deadline does not cut them short (a claim dropped after its commit would leave its jobs
    // running until their leases expire, and the completions it carried undone).
    let settle = settle_deadline(deadline);
    for dispatcher in dispatchers {
        join_by(dispatcher, settle, "dispatcher").await;
    }
    shared.acks.stop();
    if let Err(e) = tasks.acker.await {
        tracing::error!(target: LOG_TARGET, error = %e, "worker acknowledger failed");
    }
    let report = ShutdownReport {
        counters: shared.counters.snapshot(),
        aborted: shared.aborted.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
    };
    tracing::info!(
        target: LOG_TARGET,
        queue = %shared.config.queue_names(),
        completed = report.counters.completed,
        released = report.counters.released,
        aborted = report.aborted,
        "worker stopped"
    );
    report
}

/// How long after the handlers have stopped (by the deadline, or once the aborted ones have
/// released their jobs) the database calls the dispatchers have in flight (their claims, the
/// releases of the jobs they hold unstarted) may still take before they are abandoned, and
/// their jobs left to the rescuer: only a database that does not answer takes this long.
const DISPATCHER_SETTLE: Duration = Duration::from_secs(5);

/// Until when the stopping dispatchers are waited for: [`DISPATCHER_SETTLE`] after `deadline`,
/// or after now when the deadline has passed. One instant for all of them.
pub(super) fn settle_deadline(deadline: Instant) -> Instant {
    deadline.max(Instant::now()) + DISPATCHER_SETTLE
}

/// Waits for a task until `deadline`, then aborts it.
pub(super) async fn join_by(mut task: JoinHandle<()>, deadline: Instant, name: &'static str) {
    match tokio::time::timeout_at(deadline, &mut task).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::error!(target: LOG_TARGET, task = name, error = %e, "worker task failed")
        }
        Err(_) => {
            tracing::warn!(
                target: LOG_TARGET,
                task = name,
                "a database call outlived the shutdown deadline; abandoning it"
            );
            task.abort();
            let _ = task.await;
        }
    }
}

/// `d` spread by ±20 % so that workers started together do not poll together.
pub(super) fn jitter(d: Duration) -> Duration {
    d.mul_f64(0.8 + 0.4 * fastrand::f64())
}

/// Releases jobs that were claimed but will not run, counting each outcome.
pub(super) async fn release_all(shared: &Arc<Shared>, jobs: Vec<Leased>) {
    use futures::StreamExt;
    futures::stream::iter(jobs)
        .for_each_concurrent(RELEASE_CONCURRENCY, |leased| async move {
            release(shared, &leased.lease, None).await;
        })
        .await;
}

/// Releases one job, counting the outcome.
async fn release(shared: &Shared, lease: &Lease, ran: Option<Ran<'_>>) {
    match retry_transient(|| shared.queue.release(lease)).await {
        Ok(()) => shared.counters.add_released(),
        Err(e) => count_transition_error(shared, lease, "release", &e, ran),
    }
}

/// Counts a failed transition: a lost lease or a cancelled job is someone else's now; any other
/// error leaves the job running until its lease expires and the rescuer takes it back.
fn count_transition_error(
    shared: &Shared,
    lease: &Lease,
    op: &'static str,
    e: &Error,
    ran: Option<Ran<'_>>,
) {
    match e {
        Error::LeaseLost { .. } | Error::Cancelled { .. } => {
            shared.lost_one(
                lease,
                ran.and_then(|r| r.kind()),
                ran.and_then(|r| r.duration),
                e,
            );
            tracing::info!(target: LOG_TARGET, job = %lease.job_id, operation = op, error = %e, "lease no longer held");
        }
        _ => {
            shared.counters.add_abandoned(1);
            tracing::error!(
                target: LOG_TARGET,
                job = %lease.job_id,
                operation = op,
                error = %e,
                "could not record the job's outcome; it will be rescued when its lease expires"
            );
        }
    }
}

/// Runs `op` again, with a growing pause, while it fails because the database is unreachable.
async fn retry_transient<T, F, Fut>(mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut pause = TRANSITION_BACKOFF;
    let mut tries = 1;
    loop {
        match op().await {
            Err(e) if e.is_transient() && tries < TRANSITION_TRIES => {
                tracing::debug!(target: LOG_TARGET, error = %e, "retrying after a transient error");
                tokio::time::sleep(jitter(pause)).await;
                pause *= 2;
                tries += 1;
            }
            other => return other,
        }
    }
}

/// The longest pause between tries of a batch of acknowledgements during an outage.
const ACK_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Runs a batch acknowledgement again while the database is unreachable (or read-only): like
/// [`retry_transient`], and beyond its tries for up to half of what is left of a lease at worst
/// when its handler ends (the lease less one heartbeat interval: the heartbeat extended it until
/// then); an acknowledgement that arrives within it finishes the jobs, where giving up makes
/// every one of them run again after its lease expires. A late acknowledgement is
/// harmless: it is fenced by the lease token. While the worker is stopping it gives up after the
/// usual tries, so an outage does not hold up the shutdown.
async fn retry_through_outage<T, F, Fut>(shared: &Shared, mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let started = Instant::now();
    let cfg = &shared.config;
    let patience = cfg.lease.saturating_sub(cfg.heartbeat) / 2;
    let mut pause = TRANSITION_BACKOFF;
    let mut tries = 1;
    loop {
        match op().await {
            Err(e)
                if e.is_transient()
                    && (tries < TRANSITION_TRIES
                        || (!shared.acks.is_stopping()
                            && started.elapsed() + pause < patience)) =>
            {
                tracing::debug!(target: LOG_TARGET, error = %e, tries, "acknowledgements wait for the database");
                tokio::time::sleep(jitter(pause)).await;
                pause = (pause * 2).min(ACK_BACKOFF_MAX);
                tries += 1;
            }
            other => return other,
        }
    }
}

/// How a handler run ended.
enum Outcome {
    Finished(Result<(), JobError>),
    Panicked(String),
    /// The heartbeat learned that the lease is gone (lost or cancelled).
    LeaseGone(Error),
    /// The shutdown deadline passed.
    Aborted,
    /// The handler outlived the job timeout.
    TimedOut(Duration),
    /// The handler completed the job itself, in its own transaction.
    CompletedByHandler,
    /// No handler of this worker runs the job's kind (the reason names it).
    Unrouted(String),
}

/// What recording a run's outcome needs to know of the run: its kind's metric handles (which
/// also name the kind) and how long its handler ran.
#[derive(Clone, Copy)]
struct Ran<'a> {
    metrics: &'a JobMetrics,
    duration: Option<Duration>,
}

impl<'a> Ran<'a> {
    fn kind(&self) -> Option<&'a str> {
        self.metrics.kind.as_deref()
    }

    /// Reports `transition` of the job of `lease`, if anyone listens.
    fn emit(&self, shared: &Shared, transition: Transition, lease: &Lease, error: Option<&str>) {
        shared.events.emit(|| {
            JobEvent::new(
                transition,
                lease,
                self.kind(),
                self.duration,
                error.map(str::to_owned),
            )
        });
    }
}

pub(super) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

/// Runs one job from start to its recorded outcome; the slot is freed at the end.
pub(super) async fn run_job(
    shared: Arc<Shared>,
    job: Buffered,
    permit: OwnedSemaphorePermit,
    abort: watch::Receiver<bool>,
) {
    let Some(leased) = fresh_lease(&shared, job).await else {
        return;
    };
    let Leased { job, lease } = leased;
    let metrics = shared.metrics.job(&lease.queue, job.kind.as_deref());
    // Due to claimed, both by the database's clock (the claim stamped updated_at).
    let waited = (job.updated_at - job.run_at).to_std().unwrap_or_default();
    metrics.wait.record(waited.as_secs_f64());
    let span = tracing::info_span!(
        target: LOG_TARGET,
        "job",
        id = %lease.job_id,
        queue = %lease.queue,
        kind = job.kind.as_deref().unwrap_or(""),
        attempt = lease.attempt,
    );
    #[cfg(feature = "opentelemetry")]
    crate::otel::continue_trace(&span, job.meta.as_deref());
    let routed = shared.registry.route(job.kind.as_deref());
    if routed.is_ok() {
        shared
            .events
            .emit(|| JobEvent::new(Transition::Started, &lease, job.kind.as_deref(), None, None));
    }
    let cell = Arc::new(LeaseCell::new(lease));
    let (outcome, route, ran) = match routed {
        Ok(route) => {
            // A timeout stored with the job overrides its kind's, which overrides the worker's.
            let timeout = job.timeout.or(route.timeout).or(shared.config.job_timeout);
            let ctx = JobContext::new(job, cell.clone(), shared.queue.clone());
            let started = Instant::now();
            let id = cell.get().job_id;
            if let Some(running) = &shared.running {
                if !*shared.cancel_watch.borrow() {
                    let _ = shared.cancel_watch.subscribe().wait_for(|w| *w).await;
                }
                lock(running).insert(id, cell.clone());
            }
            let outcome = execute(&shared, route, timeout, ctx, &cell, abort)
                .instrument(span.clone())
                .await;
            if let Some(running) = &shared.running {
                lock(running).remove(&id);
            }
            let ran = started.elapsed();
            metrics.run.record(ran.as_secs_f64());
            (outcome, Some(route), Some(ran))
        }
        Err(why) => (Outcome::Unrouted(why), None, None),
    };
    let outcome = match outcome {
        Outcome::Finished(Ok(())) if cell.completed_by_handler() => Outcome::CompletedByHandler,
        other => other,
    };
    let ran = Ran {
        metrics: &metrics,
        duration: ran,
    };
    settle(&shared, route, outcome, &cell, ran)
        .instrument(span)
        .await;
    drop(permit);
}

/// The lease of a job about to start, extended first when the job waited in the buffer so long
/// that its lease would run out before the first heartbeat; `None` (the job is not run) when the
/// lease was lost meanwhile: the job belongs to someone else now.
async fn fresh_lease(shared: &Shared, job: Buffered) -> Option<Leased> {
    let cfg = &shared.config;
    let Buffered { leased, claimed_at } = job;
    let waited = claimed_at.elapsed();
    if waited + cfg.heartbeat + cfg.lease / 10 < cfg.lease {
        return Some(leased);
    }
    match shared.queue.extend(&leased.lease, cfg.lease).await {
        Ok(lease) => {
            let mut job = leased.job;
            job.lease_expires_at = Some(lease.expires_at);
            Some(Leased { job, lease })
        }
        Err(e @ (Error::LeaseLost { .. } | Error::Cancelled { .. })) => {
            shared.lost_one(&leased.lease, leased.job.kind.as_deref(), None, &e);
            tracing::info!(target: LOG_TARGET, job = %leased.lease.job_id, waited_ms = waited.as_millis() as u64, error = %e, "a buffered job's lease was lost; not running it");
            None
        }
        Err(e) if waited < cfg.lease => {
            tracing::warn!(target: LOG_TARGET, job = %leased.lease.job_id, error = %e, "could not extend a buffered job's lease; running it on the lease it has");
            Some(leased)
        }
        Err(e) => {
            shared.counters.add_abandoned(1);
            tracing::error!(target: LOG_TARGET, job = %leased.lease.job_id, error = %e, "a buffered job's lease ran out and could not be extended; leaving it to the rescuer");
            None
        }
    }
}

/// Runs the handler, extending the lease while it runs long, until it ends, the lease is lost,
/// its `timeout` passes, or the shutdown deadline stops it.
async fn execute(
    shared: &Shared,
    route: &Route,
    timeout: Option<Duration>,
    ctx: JobContext,
    cell: &LeaseCell,
    mut abort: watch::Receiver<bool>,
) -> Outcome {
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| route.call(ctx))) {
        Ok(fut) => fut,
        Err(p) => return Outcome::Panicked(panic_message(&*p)),
    };
    let mut fut = AssertUnwindSafe(fut).catch_unwind();
    let finished = |r: std::thread::Result<Result<(), JobError>>| match r {
        Ok(r) => Outcome::Finished(r),
        Err(p) => Outcome::Panicked(panic_message(&*p)),
    };
    let started = Instant::now();
    // Most handlers finish at their first poll; they need no timer and no abort watch.
    if let Poll::Ready(r) = futures::poll!(&mut fut) {
        return finished(r);
    }
    let mut stopping = shared.stopping.clone();
    let expired = async move {
        match timeout {
            Some(t) => tokio::time::sleep_until(started + t).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(expired);
    let beat = heartbeat(shared, cell);
    tokio::pin!(beat);
    let mut told_of_shutdown = false;
    let (reason, outcome) = loop {
        tokio::select! {
            biased;
            r = &mut fut => return finished(r),
            e = &mut beat => {
                let reason = match e {
                    Error::Cancelled { .. } => CancelReason::Cancelled,
                    _ => CancelReason::LeaseLost,
                };
                break (reason, Outcome::LeaseGone(e));
            }
            _ = abort.wait_for(|a| *a) => return Outcome::Aborted,
            _ = &mut expired => {
                break (CancelReason::Timeout, Outcome::TimedOut(timeout.unwrap_or_default()));
            }
            _ = stopping.wait_for(|s| *s), if !told_of_shutdown => {
                // The handler may finish (or snooze) before the deadline; it is recorded.
                told_of_shutdown = true;
                cell.cancel.cancel(CancelReason::Shutdown);
            }
        }
    };
    // The run ends with `outcome` whatever the handler returns now: its grace is for winding
    // down (a cancelled job's or lost lease's outcome is not this worker's to record).
    cell.cancel.cancel(reason);
    let grace = shared.config.cancel_grace;
    if !grace.is_zero() {
        tokio::select! {
            biased;
            _ = &mut fut => {}
            _ = abort.wait_for(|a| *a) => {}
            _ = tokio::time::sleep(grace) => {}
        }
    }
    outcome
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long the cancel watcher waits for a notification before it waits again.
const CANCEL_WATCH_WAIT: Duration = Duration::from_secs(600);

/// Where a cancel's notification reaches this process: each one makes every running job's
/// heartbeat extend its lease at once, which tells a cancelled job's run that it is cancelled.
async fn watch_cancels(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let Some(running) = &shared.running else {
        return;
    };
    // Listen first (a wait of no time registers the wake-up with the backend), then let
    // handlers start.
    shared
        .queue
        .wait_for_work(crate::wake::CANCEL_WAKE, Duration::ZERO)
        .await;
    shared.cancel_watch.send_replace(true);
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            _ = shared.queue.wait_for_work(crate::wake::CANCEL_WAKE, CANCEL_WATCH_WAIT) => {}
        }
        let cells: Vec<Arc<LeaseCell>> = lock(running).values().cloned().collect();
        for cell in cells {
            cell.poke.notify_one();
        }
    }
}

/// Extends the lease every `heartbeat` for as long as it is polled; returns when the lease is
/// gone. Other errors are logged and the extension is tried again sooner.
async fn heartbeat(shared: &Shared, cell: &LeaseCell) -> Error {
    let cfg = &shared.config;
    let every = cfg
        .cancel_check
        .map_or(cfg.heartbeat, |c| c.min(cfg.heartbeat));
    let mut next = Instant::now() + every;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = cell.poke.notified() => {}
        }
        let current = cell.get();
        match shared.queue.extend(&current, shared.config.lease).await {
            Ok(extended) => {
                tracing::debug!(target: LOG_TARGET, expires_at = %extended.expires_at, "lease extended");
                cell.set(extended);
                next = Instant::now() + every;
            }
            Err(e @ (Error::LeaseLost { .. } | Error::Cancelled { .. })) => return e,
            Err(e) => {
                tracing::warn!(target: LOG_TARGET, error = %e, "could not extend the lease; trying again");
                next = Instant::now() + every / 2;
            }
        }
    }
}

/// Records a handler's outcome.
async fn settle(
    shared: &Shared,
    route: Option<&Route>,
    outcome: Outcome,
    cell: &LeaseCell,
    ran: Ran<'_>,
) {
    let metrics = ran.metrics;
    let lease = cell.get();
    let failure = match outcome {
        Outcome::CompletedByHandler => {
            if cell.take_output().is_some() {
                tracing::warn!(target: LOG_TARGET, "the handler completed the job itself, so the output it recorded was not stored; complete it with the backend's complete_in_tx_with_output to store one");
            }
            shared.counters.add_completed(1);
            metrics.completed.increment(1);
            ran.emit(shared, Transition::Completed, &lease, None);
            // Completed in the handler's committed transaction: the jobs of its workflow
            // waiting for it are settled now (else the sweep would, later).
            if lease.workflow.is_some() {
                if let Err(e) = shared.queue.settle_dependents(&[lease.job_id]).await {
                    tracing::warn!(target: LOG_TARGET, job = %lease.job_id, error = %e, "could not settle the jobs waiting for a job its handler completed; the sweep will");
                }
            }
            return;
        }
        Outcome::Finished(Ok(())) => {
            metrics.completed.increment(1);
            ran.emit(shared, Transition::Completed, &lease, None);
            match cell.take_output() {
                // Jobs without an output are acknowledged in batches; one with an output is
                // completed by a statement that stores it.
                None => shared.acks.push(lease),
                Some(output) => complete_with_output(shared, &lease, &output, ran).await,
            }
            return;
        }
        Outcome::Finished(Err(e)) => match e.snoozed() {
            Some(delay) => {
                snooze(shared, route, &lease, delay, ran).await;
                return;
            }
            None => e.into_failure(),
        },
        Outcome::Panicked(msg) => {
            shared.counters.add_panicked();
            Failure::retryable(format!("handler panicked: {msg}"))
        }
        Outcome::TimedOut(after) => {
            Failure::retryable(format!("handler timed out after {after:?} and was stopped"))
        }
        Outcome::Unrouted(why) => Failure::retryable(why),
        Outcome::LeaseGone(e) => {
            shared.lost_one(&lease, ran.kind(), ran.duration, &e);
            tracing::warn!(target: LOG_TARGET, error = %e, "lease lost while the handler ran; handler stopped");
            return;
        }
        Outcome::Aborted => {
            shared.aborted.fetch_add(1, Ordering::Relaxed);
            release(shared, &lease, Some(ran)).await;
            return;
        }
    };
    let failure = Failure {
        kind: kind_backoff(route, &lease, failure.kind),
        ..failure
    };
    record_failure(shared, &lease, failure, ran).await;
}

/// Completes a job with the output its handler recorded, retried through an outage like a
/// batch of acknowledgements. A queue without recorded outputs (a hand-written `Queue` that
/// does not implement them) gets a plain acknowledgement, and the output is dropped with a
/// warning.
async fn complete_with_output(
    shared: &Shared,
    lease: &Lease,
    output: &serde_json::value::RawValue,
    ran: Ran<'_>,
) {
    let done = match retry_through_outage(shared, || shared.queue.ack_with_output(lease, output))
        .await
    {
        Err(Error::Unsupported(what)) => {
            tracing::warn!(target: LOG_TARGET, unsupported = what, "the queue stores no outputs; completing the job without its output");
            retry_through_outage(shared, || shared.queue.ack(lease)).await
        }
        other => other,
    };
    match done {
        Ok(()) => shared.counters.add_completed(1),
        Err(e) => count_transition_error(shared, lease, "ack", &e, Some(ran)),
    }
}

/// A retryable failure of a kind with its own retry policy waits that policy's backoff.
fn kind_backoff(route: Option<&Route>, lease: &Lease, kind: FailureKind) -> FailureKind {
    match (route.and_then(|r| r.retry_policy.as_ref()), kind) {
        (Some(policy), FailureKind::Retryable) => {
            FailureKind::RetryAfter(policy.backoff_jittered(lease.attempt))
        }
        _ => kind,
    }
}

/// Records a failure, counting what it did to the job.
async fn record_failure(shared: &Shared, lease: &Lease, failure: Failure, ran: Ran<'_>) {
    let message = failure.message.clone();
    match retry_transient(|| shared.queue.fail(lease, failure.clone())).await {
        Ok(outcome) => count_failure(shared, lease, outcome, &message, ran),
        Err(e) => count_transition_error(shared, lease, "fail", &e, Some(ran)),
    }
}

fn count_failure(
    shared: &Shared,
    lease: &Lease,
    outcome: FailOutcome,
    message: &str,
    ran: Ran<'_>,
) {
    let metrics = ran.metrics;
    metrics.failed.increment(1);
    match outcome {
        FailOutcome::Retrying { after } => {
            shared.counters.add_retried();
            metrics.retried.increment(1);
            ran.emit(
                shared,
                Transition::Failed { retry_in: after },
                lease,
                Some(message),
            );
            tracing::warn!(
                target: LOG_TARGET,
                error = %message,
                retry_in_ms = after.as_millis() as u64,
                "job failed; it will be retried"
            );
        }
        FailOutcome::Dead => {
            shared.counters.add_dead();
            metrics.dead.increment(1);
            ran.emit(shared, Transition::Dead, lease, Some(message));
            tracing::error!(target: LOG_TARGET, error = %message, "job failed for good; it is dead");
        }
    }
}

/// Gives the job back to run later, its attempt not spent; past its snooze bound the queue
/// records a failure instead (with the kind's backoff, where it has one). A delay beyond the
/// longest one a queue takes is cut to it, as a retry's is.
async fn snooze(
    shared: &Shared,
    route: Option<&Route>,
    lease: &Lease,
    delay: Duration,
    ran: Ran<'_>,
) {
    let metrics = ran.metrics;
    let delay = delay.min(crate::validate::MAX_DELAY);
    let max = route.map_or(super::DEFAULT_MAX_SNOOZES, |r| r.max_snoozes);
    let request = Snooze::new(delay).max_snoozes(max).past_bound(kind_backoff(
        route,
        lease,
        FailureKind::Retryable,
    ));
    match retry_transient(|| shared.queue.snooze(lease, request)).await {
        Ok(SnoozeOutcome::Snoozed) => {
            shared.counters.add_snoozed();
            metrics.snoozed.increment(1);
            ran.emit(shared, Transition::Snoozed { delay }, lease, None);
            tracing::debug!(target: LOG_TARGET, delay_ms = delay.as_millis() as u64, "job snoozed");
        }
        Ok(SnoozeOutcome::Failed(outcome)) => count_failure(
            shared,
            lease,
            outcome,
            &format!("snoozed {max} times, the most allowed"),
            ran,
        ),
        // A hand-written `Queue` without snoozes: run the job again after the delay, as a
        // failure (its attempt is spent).
        Err(Error::Unsupported(_)) => {
            let failure = Failure::retry_after(format!("snoozed for {delay:?}"), delay);
            record_failure(shared, lease, failure, ran).await;
        }
        Err(e) => count_transition_error(shared, lease, "snooze", &e, Some(ran)),
    }
}

async fn ack_one(shared: &Shared, lease: &Lease) {
    match retry_transient(|| shared.queue.ack(lease)).await {
        Ok(()) => shared.counters.add_completed(1),
        Err(e) => count_transition_error(shared, lease, "ack", &e, None),
    }
}

/// How long the acknowledger waits for more completions to join a batch that is not full yet.
/// Acks are not on any job's path (the job's slot is already free), so a short wait costs
/// nothing but lets one statement complete many jobs.
const ACK_LINGER: Duration = Duration::from_millis(2);
/// Most `ack_batch` statements in flight at once.
const ACK_FLUSHES: usize = 2;

/// Acknowledges completions in batches: a batch is sent when it holds as many jobs as the
/// worker runs or claims at once now (the claims size themselves, so the batches follow the
/// rate at which jobs complete; at most `ack_batch`), or [`ACK_LINGER`] after the first
/// completion waited, whichever comes first; up to [`ACK_FLUSHES`] batches are in flight. (The
/// dispatcher also takes waiting completions along with each claim it makes.)
async fn acker(shared: Arc<Shared>) {
    let cfg = &shared.config;
    let max = cfg.ack_batch;
    let flushes = Arc::new(Semaphore::new(ACK_FLUSHES));
    let mut in_flight = tokio::task::JoinSet::new();
    loop {
        let full = shared
            .slots
            .load(Ordering::Relaxed)
            .max(shared.claiming.load(Ordering::Relaxed))
            .min(max);
        let stopping = shared.acks.is_stopping();
        if shared.acks.len() == 0 {
            if stopping {
                break;
            }
            shared.acks.arrived.notified().await;
            continue;
        }
        if !stopping && !shared.acks.is_hurried() && shared.acks.len() < full {
            let linger = tokio::time::sleep(ACK_LINGER);
            tokio::pin!(linger);
            while shared.acks.len() < full
                && !shared.acks.is_stopping()
                && !shared.acks.is_hurried()
            {
                tokio::select! {
                    _ = &mut linger => break,
                    _ = shared.acks.arrived.notified() => {}
                }
            }
        }
        let batch = shared.acks.take(max);
        if batch.is_empty() {
            continue;
        }
        let Ok(permit) = flushes.clone().acquire_owned().await else {
            break;
        };
        let shared = shared.clone();
        in_flight.spawn(async move {
            // A panic in the queue's code loses this batch's acknowledgements, nothing else:
            // its jobs stay running until their leases expire and are rescued.
            let flushed = AssertUnwindSafe(flush(&shared, &batch)).catch_unwind().await;
            if let Err(payload) = flushed {
                shared.counters.add_abandoned(batch.len() as u64);
                let message = panic_message(payload.as_ref());
                let _ = std::panic::catch_unwind(|| {
                    tracing::error!(
                        target: LOG_TARGET,
                        jobs = batch.len(),
                        panic = %message,
                        "acknowledging completed jobs panicked; they will run again after their leases expire"
                    );
                });
            }
            drop(permit);
        });
        while in_flight.try_join_next().is_some() {}
    }
    while in_flight.join_next().await.is_some() {}
    tracing::debug!(target: LOG_TARGET, queue = %cfg.queue_names(), "acknowledger stopped");
}

/// Acknowledges one batch; leases lost meanwhile are counted. When the batch statement fails
/// for another reason than an outage, each lease is acknowledged on its own so that one bad
/// lease cannot hold back the others.
pub(super) async fn flush(shared: &Shared, batch: &[Lease]) {
    match retry_through_outage(shared, || shared.queue.ack_batch(batch)).await {
        Ok(acked) => {
            let acked = acked.min(batch.len() as u64);
            shared.counters.add_completed(acked);
            let lost = batch.len() as u64 - acked;
            if lost > 0 {
                shared.lease_lost(one_queue(batch), lost);
                tracing::info!(target: LOG_TARGET, lost, "acks skipped: leases no longer held");
            }
        }
        Err(e) if e.is_transient() => {
            shared.counters.add_abandoned(batch.len() as u64);
            tracing::error!(
                target: LOG_TARGET,
                jobs = batch.len(),
                error = %e,
                "could not acknowledge completed jobs; they will run again after their leases expire"
            );
        }
        Err(e) => {
            tracing::warn!(target: LOG_TARGET, error = %e, "batch ack failed; acknowledging one by one");
            for lease in batch {
                ack_one(shared, lease).await;
            }
        }
    }
}

/// Runs retention rounds now and then until the worker stops (the database's lease row lets
/// one process at a time run one). A round cut short by the stop leaves its lease to run out.
async fn retain(
    shared: Arc<Shared>,
    rules: crate::retention::Retention,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            round = shared.queue.run_retention(&rules) => match round {
                Ok(_) => {}
                Err(Error::Unsupported(what)) => {
                    tracing::debug!(target: LOG_TARGET, what, "this queue has no retention; the task stops");
                    return;
                }
                Err(e) => {
                    tracing::warn!(target: LOG_TARGET, error = %e, "retention round failed")
                }
            },
        }
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            _ = tokio::time::sleep(jitter(rules.every())) => {}
        }
    }
}

/// Sets the queue gauges every `every` while this worker holds the sampler's lease, until the
/// worker stops. The lease is taken (or renewed) for three intervals before each sample and
/// renewed again after it, so a slow sample does not let it run out; a holder that stops or
/// dies is replaced once its lease has run out. A worker that loses the lease (or stops) sets
/// the gauges it exported to 0, so that only the holder's numbers are non-zero; one that stops
/// gives the lease up for the next worker.
async fn sample_gauges(
    shared: Arc<Shared>,
    every: Duration,
    holder: uuid::Uuid,
    mut stop: watch::Receiver<bool>,
) {
    let queue = &shared.queue;
    let mut held = false;
    let lease = every * 3;
    loop {
        let turn = async {
            if !queue.gauge_lease(holder, lease).await? {
                return Ok(false);
            }
            crate::metrics::record_queue_gauges(&**queue).await?;
            queue.gauge_lease(holder, lease).await
        };
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            turn = turn => match turn {
                Ok(holds) => {
                    if held && !holds {
                        tracing::info!(target: LOG_TARGET, "another process samples the queue gauges now");
                        crate::metrics::clear_queue_gauges();
                    }
                    held = holds;
                }
                Err(Error::Unsupported(what)) => {
                    tracing::warn!(target: LOG_TARGET, what, "this queue keeps no gauge lease; the queue gauges are not sampled");
                    return;
                }
                Err(e) => {
                    tracing::warn!(target: LOG_TARGET, error = %e, "queue gauges not sampled");
                    if held {
                        crate::metrics::clear_queue_gauges();
                        held = false;
                    }
                }
            },
        }
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            _ = tokio::time::sleep(every) => {}
        }
    }
    if held {
        crate::metrics::clear_queue_gauges();
        if let Err(e) = queue.gauge_release(holder).await {
            tracing::debug!(target: LOG_TARGET, error = %e, "could not give up the gauge lease; it runs out by itself");
        }
    }
}

/// Returns expired leases to pending, and settles waiting workflow jobs, now and then until
/// the worker stops.
async fn rescue(shared: Arc<Shared>, every: Duration, mut stop: watch::Receiver<bool>) {
    loop {
        match shared.queue.rescue_expired().await {
            Ok(n) => {
                shared.counters.add_rescued(n);
                if n > 0 {
                    tracing::info!(target: LOG_TARGET, rescued = n, "returned jobs with expired leases");
                }
            }
            Err(e) => {
                tracing::warn!(target: LOG_TARGET, error = %e, "rescue of expired leases failed")
            }
        }
        // Workflow jobs a dead process left waiting although their dependencies finished.
        if let Err(e) = shared.queue.settle_waiting().await {
            tracing::warn!(target: LOG_TARGET, error = %e, "the sweep of waiting workflow jobs failed");
        }
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            _ = tokio::time::sleep(jitter(every)) => {}
        }
    }
}
