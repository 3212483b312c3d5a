//! The worker runtime: claims jobs from one or more queues of any [`Queue`] backend and runs,
//! for each, the handler registered for its kind.
//!
//! - **Kinds and queues**: one worker value serves several queues, each with its own
//!   concurrency (its own slots, claims and buffer), and routes each claimed job to the handler
//!   of its kind ([`WorkerBuilder::job`] for a [`crate::JobArgs`] type, [`WorkerBuilder::kind`]
//!   for a name), or to the default handler ([`WorkerBuilder::handler`], `handler_fn`, `typed`)
//!   when there is none for its kind. A job that has neither is failed by the retry policy with
//!   an error naming its kind, so during a rolling deploy a worker that knows the kind takes it
//!   at a later attempt. A kind's options (timeout, backoff, most snoozes) apply to its jobs;
//!   a timeout stored with a job overrides its kind's, which overrides the worker's.
//! - **Snooze, metadata, output**: a handler may return [`JobError::snooze`] (run again later,
//!   the attempt not spent), merge into the job's metadata while it runs
//!   ([`JobContext::merge_meta`]), and record an output stored with its completion
//!   ([`JobContext::record_output`]).
//! - **Concurrency and claims that size themselves**, per queue: at most `concurrency`
//!   handlers run at once. The worker chooses how many jobs a claim asks for: the concurrency
//!   at first and when the queue is drained, doubling while claims come back full (a backlog),
//!   up to `prefetch` (default: the backend's `max_pop`) and never more than the slots run in
//!   about a second at the pace the queue's jobs held a slot lately (so no buffered job's lease
//!   runs short, and a backlog of slow jobs is left to other workers too). Several claims are
//!   in flight while there is room (adapting to how full the last claims came back); claimed
//!   jobs without a free slot wait in a local buffer of at most one claim, so the worker never
//!   holds more than `concurrency + prefetch` jobs. A buffered job whose lease ran short while
//!   it waited has it extended before it starts; one whose lease was lost is not run. The
//!   queue's controls bound every claim in the database, whatever its size.
//! - **Batched acks**: completions go to one acknowledging task that completes them with one
//!   `ack_batch` per batch (sent when it is as large as the worker runs or claims at once now, or
//!   2 ms after its first completion; two batches at most in flight); failures are recorded one
//!   by one with `fail`.
//! - **Heartbeat**: a handler still running after `heartbeat` has its lease extended, and again
//!   every `heartbeat`; when the extension reports the lease lost (or the job cancelled), the
//!   handler is stopped, since the job belongs to someone else now.
//! - **Graceful shutdown**: popping stops at once; claims in flight are awaited and jobs
//!   claimed but not started are released; running handlers get until the deadline, then are
//!   stopped and their jobs released; pending acks are flushed. The deadline is the handlers':
//!   the database calls that settle claimed jobs are not cut short by it (only those still
//!   running 5 s after the handlers have stopped are abandoned). Every claimed job ends
//!   completed, failed, or released (or, after a database error, left to the rescuer).
//! - **Panics** in handlers are caught and recorded as retryable failures, and so is a handler
//!   that outlives the optional `job_timeout` (it is stopped).
//! - **Wake-ups**: after an empty pop the worker waits in [`Queue::wait_for_work`] for an
//!   adaptive, jittered interval; a full batch is followed by another pop at once.
//! - **Rescuer**: every `rescue_interval` (jittered) expired leases are returned to pending.
//! - **Retention**: every interval of its [`Retention`](crate::Retention) rules (jittered),
//!   finished jobs past their age are deleted, by one process at a time across all of them
//!   (default: completed and cancelled after 24 h, dead after 7 days; `retention(Retention::off())`
//!   keeps every job).
//! - **Tracing**: each job runs in an `info` span `job` (target `queue::worker`) with its id,
//!   queue, kind and attempt.
//! - **Job events**: [`Worker::events`] and [`WorkerHandle::events`] subscribe to each job's
//!   transitions ([`JobEvent`]), sent where the counters, metrics and traces record them; the
//!   worker never waits for a subscriber ([`EventItem::Lagged`] says what a slow one lost).
//! - **Middleware**: [`WorkerBuilder::middleware`] and [`WorkerBuilder::kind_middleware`] wrap
//!   every handler run (or a kind's) with a [`Middleware`], which sees the context before and
//!   the outcome after the run, may replace the outcome, and adds per-run values
//!   ([`JobContext::extensions_mut`]); the first added is the outermost.
//! - **Cooperative cancellation**: [`JobContext::cancelled`] tells a running handler to stop,
//!   with its [`CancelReason`]: an operator's cancel (through the wake-up notifications where
//!   the backend has them, else within `cancel_check`), a lost lease, its timeout (each
//!   followed by `cancel_grace`, then the handler is stopped and its result not recorded), or
//!   the shutdown (the handler's outcome before the deadline is recorded).
//! - **Queues at runtime**: [`WorkerHandle::add_queue`], [`WorkerHandle::set_concurrency`]
//!   and [`WorkerHandle::remove_queue`] change the queues a running worker serves.
//!
//! For throughput: claims overlap with each other and with running handlers, so short jobs are
//! bound by the database, not by one claim's round trip. `pop_concurrency` caps the claims in
//! flight (by default enough to refill the slots and the buffer, at most 16).
//!
//! No handler ever runs while the worker holds a database connection or transaction: the worker
//! only calls the [`Queue`] trait, whose calls each complete before the handler starts.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use std::time::Duration;
//! # use dbqueue::Queue;
//! use dbqueue::worker::{JobContext, JobError, Worker};
//!
//! #[derive(serde::Deserialize)]
//! struct Email {
//!     to: String,
//! }
//!
//! # async fn example(queue: Arc<dyn Queue>) -> dbqueue::Result<()> {
//! let handle = Worker::builder(queue.clone(), "emails")
//!     .concurrency(16)
//!     .prefetch(32)
//!     .lease(Duration::from_secs(30))
//!     .heartbeat(Duration::from_secs(10))
//!     .typed(|email: Email, _ctx: JobContext| async move {
//!         if email.to.is_empty() {
//!             return Err(JobError::permanent("no recipient"));
//!         }
//!         Ok(())
//!     })
//!     .build()?
//!     .start();
//! let counters = handle.counters();
//! println!("{} completed so far", counters.completed());
//! let report = handle.shutdown(Duration::from_secs(10)).await;
//! println!("{report:?}");
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::queue::Queue;

mod builder;
mod cancel;
mod counters;
mod dispatch;
mod events;
mod handler;
mod inline;
mod middleware;
mod queues;
mod registry;
mod runtime;

pub use builder::{
    WorkerBuilder, MAX_CONCURRENCY, MAX_INTERVAL, MAX_POP_CONCURRENCY, MIN_INTERVAL,
};
pub use cancel::CancelReason;
pub use counters::{Counters, CountersSnapshot, ShutdownReport};
pub use events::{
    EventItem, Events, JobEvent, Transition, DEFAULT_EVENT_CAPACITY, MAX_EVENT_CAPACITY,
};
pub use handler::{Handler, JobContext, JobError};
pub use inline::{Drained, DrainedJob, RunOutcome};
pub use middleware::{middleware_fn, Extensions, Middleware, Next};
pub use runtime::WorkerHandle;

/// The most runs of one [`Worker::drain`].
pub const DRAIN_LIMIT: usize = 10_000;

pub use crate::job::DEFAULT_MAX_SNOOZES;

/// The log target of the worker runtime.
pub const LOG_TARGET: &str = "queue::worker";

/// The validated settings of one queue a worker claims from.
#[derive(Clone, Debug)]
pub(crate) struct QueueConfig {
    pub(crate) name: String,
    pub(crate) concurrency: usize,
    pub(crate) prefetch: usize,
    /// Most claims in flight; `None`: chosen from the concurrency and the prefetch.
    pub(crate) pop_concurrency: Option<usize>,
}

/// The validated settings of a worker.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// The queues it claims from, each with its own slots; at least one.
    pub(crate) queues: Vec<QueueConfig>,
    pub(crate) worker_id: String,
    pub(crate) lease: Duration,
    pub(crate) heartbeat: Duration,
    pub(crate) poll_min: Duration,
    pub(crate) poll_max: Duration,
    pub(crate) rescue_interval: Option<Duration>,
    /// The retention rules the worker runs rounds of (`None`: no retention task).
    pub(crate) retention: Option<crate::retention::Retention>,
    /// How often to sample the queue gauges while holding the sampler's lease (`None`: never).
    pub(crate) queue_gauges: Option<Duration>,
    pub(crate) ack_batch: usize,
    pub(crate) shutdown_timeout: Duration,
    pub(crate) job_timeout: Option<Duration>,
    /// How long a handler asked to stop (cancelled, lease lost, timed out) may run on.
    pub(crate) cancel_grace: Duration,
    /// How often, at least, a running job's lease is extended, which reports a cancel.
    pub(crate) cancel_check: Option<Duration>,
}

impl Config {
    /// The queues' names, for logs.
    pub(crate) fn queue_names(&self) -> String {
        let names: Vec<&str> = self.queues.iter().map(|q| q.name.as_str()).collect();
        names.join(",")
    }
}

/// A configured worker, ready to [`start`](Worker::start). Build one with [`Worker::builder`].
pub struct Worker {
    queue: Arc<dyn Queue>,
    registry: Arc<registry::Registry>,
    config: Config,
    /// Runs beside the worker, when one was attached.
    scheduler: Option<crate::periodic::Scheduler>,
    /// Where its job events go.
    events: events::EventHub,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// Starts configuring a worker for the queue named `queue_name` of `queue`
    /// ([`WorkerBuilder::queue`] adds more).
    pub fn builder(queue: Arc<dyn Queue>, queue_name: impl Into<String>) -> WorkerBuilder {
        WorkerBuilder::new(queue, queue_name.into())
    }

    /// The first queue this worker claims from.
    pub fn queue_name(&self) -> &str {
        &self.config.queues[0].name
    }

    /// Every queue this worker claims from, with its concurrency.
    pub fn queues(&self) -> Vec<(&str, usize)> {
        self.config
            .queues
            .iter()
            .map(|q| (q.name.as_str(), q.concurrency))
            .collect()
    }

    /// The kinds this worker has a handler for, by name.
    pub fn kinds(&self) -> Vec<&str> {
        self.registry.kinds().collect()
    }

    /// Subscribes to the events of the jobs this worker runs ([`JobEvent`]: started,
    /// completed, failed, dead, snoozed, cancelled, lease lost), from the first job on when
    /// called before [`Worker::start`] (a [`WorkerHandle::events`] subscription sees those
    /// sent after it). The worker never waits for a subscriber: one that falls more than
    /// `event_capacity` events behind loses the oldest and is told how many
    /// ([`EventItem::Lagged`]). Without a subscriber, no event is built.
    pub fn events(&self) -> Events {
        self.events.subscribe()
    }

    /// Spawns the worker's tasks on the current Tokio runtime and returns its handle. Dropping
    /// the handle shuts the worker down in the background with the configured
    /// `shutdown_timeout`.
    ///
    /// # Panics
    /// When called outside a Tokio runtime.
    pub fn start(self) -> WorkerHandle {
        let mut handle = runtime::start(self.queue, self.registry, self.config, self.events);
        handle.scheduler = self.scheduler.map(crate::periodic::Scheduler::start);
        handle
    }

    /// Runs every due job of the worker's queues through its handlers, one at a time in this
    /// task, until none is due, and says what became of each: for tests of handlers (with the
    /// in-memory backend's manual clock, delays and retries become due when the test moves
    /// time), and for one-shot runs. Jobs the handlers push that are due at once run too; a
    /// job retried or snoozed into the future waits for a later drain. The jobs run as in a
    /// started worker (routing by kind, timeouts, caught panics, retry policies, snoozes,
    /// outputs), are claimed through the queue's controls (a paused queue gives nothing), and
    /// are claimed from the queues in turn, in each queue's claim order. Stops after 10,000
    /// runs ([`Drained::stopped_at_limit`]); see [`Worker::drain_at_most`].
    ///
    /// The worker is not started: no dispatcher, rescuer, retention or scheduler runs.
    ///
    /// # Errors
    /// A claim or a read of a job failed (what ran until then is lost to the caller; the jobs
    /// themselves are recorded as they ended).
    pub async fn drain(&self) -> crate::Result<Drained> {
        self.drain_at_most(DRAIN_LIMIT).await
    }

    /// [`Worker::drain`], stopping after `limit` runs.
    ///
    /// # Errors
    /// As [`Worker::drain`].
    pub async fn drain_at_most(&self, limit: usize) -> crate::Result<Drained> {
        inline::drain(
            self.queue.clone(),
            self.registry.clone(),
            self.config.clone(),
            self.events.clone(),
            limit,
        )
        .await
    }

    /// Runs until `signal` completes (e.g. `tokio::signal::ctrl_c()`), then shuts down
    /// gracefully within the configured `shutdown_timeout` and returns the report.
    ///
    /// # Panics
    /// When called outside a Tokio runtime.
    pub async fn run_until<F>(self, signal: F) -> ShutdownReport
    where
        F: Future,
    {
        let timeout = self.config.shutdown_timeout;
        let handle = self.start();
        signal.await;
        handle.shutdown(timeout).await
    }
}
