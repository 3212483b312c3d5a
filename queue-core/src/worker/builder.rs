//! [`WorkerBuilder`]: configures and validates a [`Worker`].

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::events::{DEFAULT_EVENT_CAPACITY, MAX_EVENT_CAPACITY};
use super::handler::{FnHandler, Handler, JobContext, JobError, TypedHandler};
use super::middleware::Middleware;
use super::registry::{Registry, Route};
use super::{Config, QueueConfig, Worker, DEFAULT_MAX_SNOOZES, LOG_TARGET};
use crate::error::{Error, Result};
use crate::job::{JobArgs, KindOptions};
use crate::periodic::Scheduler;
use crate::queue::{default_worker_id, Queue};
use crate::validate;

/// Most handlers one worker runs at once.
pub const MAX_CONCURRENCY: usize = 100_000;
/// Most pops one worker runs at once.
pub const MAX_POP_CONCURRENCY: usize = 64;
/// Longest poll interval and rescue interval.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// Shortest poll interval and rescue interval.
pub const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// Checks the concurrency of the queue `queue` (at the build, and when a running worker's
/// handle changes its queues).
pub(super) fn check_concurrency(concurrency: usize, queue: &str) -> Result<()> {
    if concurrency == 0 {
        return Err(Error::invalid(
            "concurrency",
            format!("must be at least 1 (queue {queue:?})"),
        ));
    }
    if concurrency > MAX_CONCURRENCY {
        return Err(Error::invalid(
            "concurrency",
            format!("must be at most {MAX_CONCURRENCY} (queue {queue:?})"),
        ));
    }
    Ok(())
}

/// Configures a [`Worker`]; see [`Worker::builder`]. Nothing is checked until
/// [`WorkerBuilder::build`], which names the first field that breaks a rule.
#[must_use = "a builder does nothing until build() and start()"]
pub struct WorkerBuilder {
    queue: Arc<dyn Queue>,
    queue_name: String,
    /// Further queues, with their concurrency.
    more_queues: Vec<(String, usize)>,
    /// Handlers by kind, in the order they were registered.
    kinds: Vec<(String, KindOptions, Arc<dyn Handler>)>,
    max_snoozes: u32,
    worker_id: Option<String>,
    concurrency: usize,
    prefetch: Option<usize>,
    pop_concurrency: Option<usize>,
    lease: Duration,
    heartbeat: Option<Duration>,
    poll_min: Duration,
    poll_max: Duration,
    rescue_interval: Option<Duration>,
    retention: crate::retention::Retention,
    queue_gauges: Option<Duration>,
    ack_batch: Option<usize>,
    shutdown_timeout: Duration,
    job_timeout: Option<Duration>,
    handler: Option<Arc<dyn Handler>>,
    scheduler: Option<Scheduler>,
    /// Around every handler run, outermost first.
    middleware: Vec<Arc<dyn Middleware>>,
    cancel_grace: Duration,
    cancel_check: Option<Duration>,
    /// Around the runs of one kind, inside the worker's, outermost first.
    kind_middleware: Vec<(String, Arc<dyn Middleware>)>,
    event_capacity: usize,
}

/// The shortest interval of [`WorkerBuilder::queue_gauges`].
const MIN_GAUGE_INTERVAL: Duration = Duration::from_secs(5);

impl WorkerBuilder {
    pub(crate) fn new(queue: Arc<dyn Queue>, queue_name: String) -> Self {
        WorkerBuilder {
            queue,
            queue_name,
            more_queues: Vec::new(),
            kinds: Vec::new(),
            max_snoozes: DEFAULT_MAX_SNOOZES,
            worker_id: None,
            concurrency: 10,
            prefetch: None,
            pop_concurrency: None,
            lease: Duration::from_secs(30),
            heartbeat: None,
            poll_min: Duration::from_millis(50),
            poll_max: Duration::from_secs(2),
            rescue_interval: Some(Duration::from_secs(30)),
            retention: crate::retention::Retention::default(),
            queue_gauges: None,
            ack_batch: None,
            shutdown_timeout: Duration::from_secs(30),
            job_timeout: None,
            handler: None,
            scheduler: None,
            middleware: Vec::new(),
            cancel_grace: Duration::ZERO,
            cancel_check: None,
            kind_middleware: Vec::new(),
            event_capacity: DEFAULT_EVENT_CAPACITY,
        }
    }

    /// Wraps every handler run of this worker with `middleware` ([`Middleware`]). The first
    /// added is the outermost; the worker's middleware wrap a kind's
    /// ([`WorkerBuilder::kind_middleware`]).
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        self.middleware.push(Arc::new(middleware));
        self
    }

    /// Wraps the runs of the handler of `kind` with `middleware`, inside the worker's
    /// middleware (the first added for the kind is the outermost of the kind's).
    pub fn kind_middleware(mut self, kind: impl Into<String>, middleware: impl Middleware) -> Self {
        self.kind_middleware
            .push((kind.into(), Arc::new(middleware)));
        self
    }

    /// How long a handler asked to stop because its job was cancelled, its lease lost or its
    /// timeout passed may run on to wind down ([`JobContext::cancelled`]) before it is stopped
    /// (default zero: stopped at once). Its result is not recorded either way. (At a shutdown
    /// the shutdown's deadline is the grace.)
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// How soon, at most, a running job learns that an operator cancelled it where the database
    /// sends no notification of it to other processes (everywhere but PostgreSQL and the
    /// in-memory backend): its lease is extended at least this often (one fenced update per
    /// running job and interval), and the extension reports a cancel. Default: only at the
    /// heartbeat. Must be shorter than the lease.
    pub fn cancel_check(mut self, every: Duration) -> Self {
        self.cancel_check = Some(every);
        self
    }

    /// How many job events a subscriber ([`Worker::events`]) may leave unread before it loses
    /// the oldest (default [`DEFAULT_EVENT_CAPACITY`], at most [`MAX_EVENT_CAPACITY`]). The
    /// worker never waits for a subscriber.
    pub fn event_capacity(mut self, n: usize) -> Self {
        self.event_capacity = n;
        self
    }

    /// Runs `scheduler` beside the worker: it starts with [`Worker::start`] and stops first
    /// when the worker shuts down. (A scheduler can also run on its own, with
    /// [`Scheduler::start`].)
    pub fn scheduler(mut self, scheduler: Scheduler) -> Self {
        self.scheduler = Some(scheduler);
        self
    }

    /// How many handlers of the first queue run at once (default 10).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// Claims from the queue `name` too, running at most `concurrency` of its jobs at once (its
    /// own slots, claims and buffer, apart from every other queue's). Every queue's jobs go to
    /// the handlers of their kinds.
    pub fn queue(mut self, name: impl Into<String>, concurrency: usize) -> Self {
        self.more_queues.push((name.into(), concurrency));
        self
    }

    /// Runs `f` for every job of the kind `A::KIND`, with its args deserialized into `A` (args
    /// that do not fit `A` are a permanent failure naming the type). The kind's
    /// [`JobArgs::options`] apply: its timeout (for jobs pushed without one), its retry policy
    /// and its most snoozes.
    pub fn job<A, F, Fut>(self, f: F) -> Self
    where
        A: JobArgs,
        F: Fn(A, JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.kind(
            A::KIND,
            A::options(),
            TypedHandler {
                f,
                _payload: PhantomData::<fn() -> A>,
            },
        )
    }

    /// Runs `handler` for every job of kind `kind`, with `options` (timeout, retry policy, most
    /// snoozes; the queue, priority and attempts of `options` are push defaults and are not
    /// used here).
    pub fn kind(
        mut self,
        kind: impl Into<String>,
        options: KindOptions,
        handler: impl Handler,
    ) -> Self {
        self.kinds.push((kind.into(), options, Arc::new(handler)));
        self
    }

    /// Runs the closure for every job of kind `kind`, with its [`JobContext`] and `options`
    /// (as [`WorkerBuilder::kind`]).
    pub fn kind_fn<F, Fut>(self, kind: impl Into<String>, options: KindOptions, f: F) -> Self
    where
        F: Fn(JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.kind(kind, options, FnHandler(f))
    }

    /// Most snoozes per job for kinds that do not set their own (default
    /// [`DEFAULT_MAX_SNOOZES`]).
    pub fn max_snoozes(mut self, n: u32) -> Self {
        self.max_snoozes = n;
        self
    }

    /// Most jobs claimed by one claim, for each queue (default: the backend's `max_pop`, 1,000
    /// unless its limits say otherwise). The worker sizes its claims itself below this bound:
    /// from the queue's concurrency, doubling while claims come back full, never more than its
    /// slots run in about a second at the pace its jobs have taken lately, and back to the
    /// concurrency when the queue is drained. Claimed jobs that find no free slot wait in a
    /// local buffer of at most the current claim size, so a worker holds at most
    /// `concurrency + prefetch` jobs; a job that waited long enough for its lease to run short
    /// has it extended before it starts, and one whose lease was lost is not run.
    pub fn prefetch(mut self, n: usize) -> Self {
        self.prefetch = Some(n);
        self
    }

    /// Most claims in flight at once (default: enough to refill the slots and the buffer with
    /// claims of half the current claim size, at most 16; with prefetch 1 and 16 slots, 16
    /// one-job claims).
    /// The number actually in flight adapts: it grows while claims come back full and drops to
    /// one when the queue is drained, so an idle worker makes one claim per poll interval.
    pub fn pop_concurrency(mut self, n: usize) -> Self {
        self.pop_concurrency = Some(n);
        self
    }

    /// How long a claim lasts before the heartbeat must extend it (default 30 s).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How often the lease of a running job is extended (default a third of the lease); must
    /// be shorter than the lease.
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = Some(every);
        self
    }

    /// The wait after an empty pop: it starts at `min`, doubles on each empty pop up to `max`,
    /// and returns to `min` when work is found; each wait is jittered. A push through the same
    /// queue value (or a database notification) ends the wait early. Default 50 ms .. 2 s.
    pub fn poll_interval(mut self, min: Duration, max: Duration) -> Self {
        self.poll_min = min;
        self.poll_max = max;
        self
    }

    /// How often (jittered) to return expired leases to pending, and to sweep the waiting jobs
    /// of workflows that a process which died mid-way left unsettled
    /// ([`Queue::settle_waiting`](crate::Queue::settle_waiting)); `None` disables the rescuer
    /// (default 30 s).
    pub fn rescue_interval(mut self, every: Option<Duration>) -> Self {
        self.rescue_interval = every;
        self
    }

    /// Which finished jobs to delete by age, and how often ([`Retention`]; default: completed
    /// and cancelled jobs 24 h after they finished, dead jobs after 7 days, checked every
    /// minute). Rounds run in one process at a time across every worker of the database,
    /// whatever its queues; [`Retention::off`] runs none.
    ///
    /// [`Retention`]: crate::Retention
    /// [`Retention::off`]: crate::Retention::off
    pub fn retention(mut self, rules: crate::retention::Retention) -> Self {
        self.retention = rules;
        self
    }

    /// Sets the queue gauges of [`crate::metrics`] (`dbqueue_queue_jobs`,
    /// `dbqueue_queue_oldest_due_seconds`, for every queue of the database) from the database
    /// every `every` (5 s to 1 hour; default: never), in one process at a time: the worker that
    /// holds the sampler's lease in the database samples, and keeps the lease while it runs;
    /// when it stops, another worker with this option takes over at its next turn, and when it
    /// dies, after three intervals. A worker that does not hold the lease exports the gauges
    /// as 0 (or not at all), so a sum or a maximum across processes is the database's number.
    /// Each sample is one [`Queue::stats`] (which reads every pending and running job's row,
    /// and up to the stats cap of finished ones, per queue) and one read of the database's
    /// clock: choose `every` with the backlog in mind. Give it to the
    /// workers of the services whose metrics are scraped; `queue serve` samples at each scrape
    /// of `/metrics` without it.
    pub fn queue_gauges(mut self, every: Duration) -> Self {
        self.queue_gauges = Some(every);
        self
    }

    /// The id recorded in claimed rows (default `hostname:pid`).
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.worker_id = Some(id.into());
        self
    }

    /// Most completions acknowledged in one `ack_batch` call (default 500, capped at the
    /// queue's `max_batch`).
    pub fn ack_batch_size(mut self, n: usize) -> Self {
        self.ack_batch = Some(n);
        self
    }

    /// How long in-flight handlers may run on after a shutdown begins when no deadline is
    /// given: by [`Worker::run_until`] and when the [`super::WorkerHandle`] is dropped
    /// (default 30 s).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// The longest a handler may run: past it, the handler is stopped and the job fails with a
    /// retryable error saying so. `None` (the default) lets handlers run as long as they like,
    /// their leases extended by the heartbeat.
    pub fn job_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.job_timeout = timeout;
        self
    }

    /// Runs `handler` for each job that has no kind, or a kind without a handler of its own
    /// (the default handler).
    pub fn handler(mut self, handler: impl Handler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Runs the closure for each job, with its [`JobContext`] (the default handler, as
    /// [`WorkerBuilder::handler`]).
    pub fn handler_fn<F, Fut>(self, f: F) -> Self
    where
        F: Fn(JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.handler(FnHandler(f))
    }

    /// Runs the closure for each job with its payload deserialized into `T` (the default
    /// handler, as [`WorkerBuilder::handler`]). A payload that does not fit `T` is a permanent
    /// failure whose message names the type and the error.
    pub fn typed<T, F, Fut>(self, f: F) -> Self
    where
        T: DeserializeOwned + Send + 'static,
        F: Fn(T, JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.handler(TypedHandler {
            f,
            _payload: PhantomData,
        })
    }

    /// Checks every setting against the rules and the queue's limits.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the first field that breaks a rule (`queue`,
    /// `concurrency`, `prefetch`, `pop_concurrency`, `lease`, `heartbeat`, `poll_interval`,
    /// `rescue_interval`, `worker`, `ack_batch_size`, `shutdown_timeout`, `job_timeout`,
    /// `max_snoozes`, `cancel_grace`, `cancel_check`, `event_capacity`, `kind` and a kind's options as `kinds[<kind>].<option>`,
    /// `kind_middleware`, `handler`).
    pub fn build(self) -> Result<Worker> {
        let limits = &self.queue.capabilities().limits;
        if self
            .pop_concurrency
            .is_some_and(|n| !(1..=MAX_POP_CONCURRENCY).contains(&n))
        {
            return Err(Error::invalid(
                "pop_concurrency",
                format!("must be between 1 and {MAX_POP_CONCURRENCY}"),
            ));
        }
        let mut queues: Vec<QueueConfig> = Vec::with_capacity(1 + self.more_queues.len());
        let all = std::iter::once((self.queue_name.clone(), self.concurrency))
            .chain(self.more_queues.iter().cloned());
        for (name, concurrency) in all {
            validate::queue_name(&name)?;
            if queues.iter().any(|q| q.name == name) {
                return Err(Error::invalid(
                    "queue",
                    format!("{name:?} is named twice; each queue has one concurrency"),
                ));
            }
            check_concurrency(concurrency, &name)?;
            let prefetch = match self.prefetch {
                Some(0) => return Err(Error::invalid("prefetch", "must be at least 1")),
                Some(n) if n > limits.max_pop => {
                    return Err(Error::invalid(
                        "prefetch",
                        format!(
                            "must be at most the queue's max_pop of {} (got {n})",
                            limits.max_pop
                        ),
                    ))
                }
                Some(n) => n,
                None => limits.max_pop.max(1),
            };
            queues.push(QueueConfig {
                name,
                concurrency,
                prefetch,
                pop_concurrency: self.pop_concurrency,
            });
        }
        validate::lease("lease", self.lease)?;
        let heartbeat = self.heartbeat.unwrap_or(self.lease / 3);
        if heartbeat.is_zero() {
            return Err(Error::invalid("heartbeat", "must be longer than zero"));
        }
        if heartbeat >= self.lease {
            return Err(Error::invalid(
                "heartbeat",
                format!(
                    "must be shorter than the lease ({:?}), or the lease expires before it is extended",
                    self.lease
                ),
            ));
        }
        if self.poll_min < MIN_INTERVAL {
            return Err(Error::invalid(
                "poll_interval",
                "the minimum must be at least 1 ms",
            ));
        }
        if self.poll_max < self.poll_min {
            return Err(Error::invalid(
                "poll_interval",
                "the maximum must not be below the minimum",
            ));
        }
        if self.poll_max > MAX_INTERVAL {
            return Err(Error::invalid(
                "poll_interval",
                "the maximum must be at most 1 hour",
            ));
        }
        if let Some(every) = self.rescue_interval {
            if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&every) {
                return Err(Error::invalid(
                    "rescue_interval",
                    "must be between 1 ms and 1 hour (or None to disable)",
                ));
            }
        }
        self.retention.validate()?;
        if let Some(every) = self.queue_gauges {
            if !(MIN_GAUGE_INTERVAL..=MAX_INTERVAL).contains(&every) {
                return Err(Error::invalid(
                    "queue_gauges",
                    "must be between 5 s and 1 hour",
                ));
            }
        }
        let worker_id = self.worker_id.unwrap_or_else(default_worker_id);
        validate::worker_id(&worker_id)?;
        let ack_batch = match self.ack_batch {
            Some(0) => return Err(Error::invalid("ack_batch_size", "must be at least 1")),
            Some(n) if n > limits.max_batch => {
                return Err(Error::invalid(
                    "ack_batch_size",
                    format!(
                        "must be at most the queue's max_batch of {} (got {n})",
                        limits.max_batch
                    ),
                ))
            }
            Some(n) => n,
            None => 500.min(limits.max_batch).max(1),
        };
        if self.shutdown_timeout > validate::MAX_LEASE {
            return Err(Error::invalid(
                "shutdown_timeout",
                "must be at most 24 hours",
            ));
        }
        if let Some(t) = self.job_timeout {
            if !(MIN_INTERVAL..=validate::MAX_LEASE).contains(&t) {
                return Err(Error::invalid(
                    "job_timeout",
                    "must be between 1 ms and 24 hours (or None for no limit)",
                ));
            }
        }
        validate::max_snoozes(self.max_snoozes)?;
        if self.cancel_grace > MAX_INTERVAL {
            return Err(Error::invalid("cancel_grace", "must be at most 1 hour"));
        }
        if let Some(every) = self.cancel_check {
            if every < MIN_INTERVAL || every >= self.lease {
                return Err(Error::invalid(
                    "cancel_check",
                    format!(
                        "must be at least 1 ms and shorter than the lease ({:?})",
                        self.lease
                    ),
                ));
            }
        }
        if !(1..=MAX_EVENT_CAPACITY).contains(&self.event_capacity) {
            return Err(Error::invalid(
                "event_capacity",
                format!("must be between 1 and {MAX_EVENT_CAPACITY}"),
            ));
        }
        for (kind, _) in &self.kind_middleware {
            if !self.kinds.iter().any(|(k, _, _)| k == kind) {
                return Err(Error::invalid(
                    "kind_middleware",
                    format!("{kind:?} has no handler in this worker; register it with job or kind first"),
                ));
            }
        }
        let chain_of = |kind: Option<&str>| -> Option<Arc<[Arc<dyn Middleware>]>> {
            let chain: Vec<Arc<dyn Middleware>> = self
                .middleware
                .iter()
                .cloned()
                .chain(
                    self.kind_middleware
                        .iter()
                        .filter(|(k, _)| Some(k.as_str()) == kind)
                        .map(|(_, m)| m.clone()),
                )
                .collect();
            (!chain.is_empty()).then(|| chain.into())
        };
        let mut kinds = std::collections::BTreeMap::new();
        for (kind, options, handler) in self.kinds {
            validate::kind(&kind)?;
            options
                .validate()
                .map_err(|e| e.in_field(&format!("kinds[{kind}]")))?;
            if let Some(q) = options.queue.as_deref() {
                if !queues.iter().any(|c| c.name == q) {
                    tracing::warn!(target: LOG_TARGET, kind = %kind, queue = q, "the kind's jobs go to a queue this worker does not claim from");
                }
            }
            let route = Route {
                handler,
                timeout: options.timeout,
                retry_policy: options.retry_policy,
                max_snoozes: options.max_snoozes.unwrap_or(self.max_snoozes),
                chain: chain_of(Some(&kind)),
            };
            if kinds.insert(kind.clone(), route).is_some() {
                return Err(Error::invalid(
                    "kind",
                    format!("{kind:?} has two handlers; register each kind once"),
                ));
            }
        }
        let default = self.handler.map(|handler| Route {
            handler,
            timeout: None,
            retry_policy: None,
            max_snoozes: self.max_snoozes,
            chain: chain_of(None),
        });
        if default.is_none() && kinds.is_empty() {
            return Err(Error::invalid(
                "handler",
                "must be set with job or kind (a handler per kind), or handler, handler_fn or typed (one for every job)",
            ));
        }
        Ok(Worker {
            queue: self.queue,
            registry: Arc::new(Registry { kinds, default }),
            scheduler: self.scheduler,
            events: super::events::EventHub::new(self.event_capacity),
            config: Config {
                queues,
                worker_id,
                lease: self.lease,
                heartbeat,
                poll_min: self.poll_min,
                poll_max: self.poll_max,
                rescue_interval: self.rescue_interval,
                retention: (!self.retention.is_off()).then_some(self.retention),
                queue_gauges: self.queue_gauges,
                ack_batch,
                shutdown_timeout: self.shutdown_timeout,
                job_timeout: self.job_timeout,
                cancel_grace: self.cancel_grace,
                cancel_check: self.cancel_check,
            },
        })
    }
}
