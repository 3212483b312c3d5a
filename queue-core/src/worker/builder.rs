//! [`WorkerBuilder`]: configures and validates a [`Worker`].

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::handler::{FnHandler, Handler, JobContext, JobError, TypedHandler};
use super::{Config, Worker};
use crate::error::{Error, Result};
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

/// Configures a [`Worker`]; see [`Worker::builder`]. Nothing is checked until
/// [`WorkerBuilder::build`], which names the first field that breaks a rule.
#[must_use = "a builder does nothing until build() and start()"]
pub struct WorkerBuilder {
    queue: Arc<dyn Queue>,
    queue_name: String,
    worker_id: Option<String>,
    concurrency: usize,
    prefetch: Option<usize>,
    pop_concurrency: Option<usize>,
    lease: Duration,
    heartbeat: Option<Duration>,
    poll_min: Duration,
    poll_max: Duration,
    rescue_interval: Option<Duration>,
    ack_batch: Option<usize>,
    shutdown_timeout: Duration,
    job_timeout: Option<Duration>,
    handler: Option<Arc<dyn Handler>>,
    scheduler: Option<Scheduler>,
}

impl WorkerBuilder {
    pub(crate) fn new(queue: Arc<dyn Queue>, queue_name: String) -> Self {
        WorkerBuilder {
            queue,
            queue_name,
            worker_id: None,
            concurrency: 10,
            prefetch: None,
            pop_concurrency: None,
            lease: Duration::from_secs(30),
            heartbeat: None,
            poll_min: Duration::from_millis(50),
            poll_max: Duration::from_secs(2),
            rescue_interval: Some(Duration::from_secs(30)),
            ack_batch: None,
            shutdown_timeout: Duration::from_secs(30),
            job_timeout: None,
            handler: None,
            scheduler: None,
        }
    }

    /// Runs `scheduler` beside the worker: it starts with [`Worker::start`] and stops first
    /// when the worker shuts down. (A scheduler can also run on its own, with
    /// [`Scheduler::start`].)
    pub fn scheduler(mut self, scheduler: Scheduler) -> Self {
        self.scheduler = Some(scheduler);
        self
    }

    /// How many handlers run at once (default 10).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// Most jobs claimed by one claim (default: the concurrency, capped at the queue's
    /// `max_pop`). Claimed jobs that find no free slot wait in a local buffer of at most this
    /// many jobs, so a worker holds at most `concurrency + prefetch` jobs; a job that waited
    /// long enough for its lease to run short has it extended before it starts, and one whose
    /// lease was lost is not run.
    pub fn prefetch(mut self, n: usize) -> Self {
        self.prefetch = Some(n);
        self
    }

    /// Most claims in flight at once (default: enough to refill the slots and the buffer with
    /// claims of half a prefetch, at most 16; with prefetch 1 and 16 slots, 16 one-job claims).
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

    /// How often (jittered) to return expired leases to pending; `None` disables the rescuer
    /// (default 30 s).
    pub fn rescue_interval(mut self, every: Option<Duration>) -> Self {
        self.rescue_interval = every;
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

    /// Runs `handler` for each job.
    pub fn handler(mut self, handler: impl Handler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Runs the closure for each job, with its [`JobContext`].
    pub fn handler_fn<F, Fut>(self, f: F) -> Self
    where
        F: Fn(JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.handler(FnHandler(f))
    }

    /// Runs the closure for each job with its payload deserialized into `T`. A payload that
    /// does not fit `T` is a permanent failure whose message names the type and the error.
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
    /// `concurrency`, `prefetch`, `pop_concurrency`, `lease`, `heartbeat`, `poll_interval`, `rescue_interval`,
    /// `worker`, `ack_batch_size`, `shutdown_timeout`, `job_timeout`, `handler`).
    pub fn build(self) -> Result<Worker> {
        let limits = &self.queue.capabilities().limits;
        validate::queue_name(&self.queue_name)?;
        if self.concurrency == 0 {
            return Err(Error::invalid("concurrency", "must be at least 1"));
        }
        if self.concurrency > MAX_CONCURRENCY {
            return Err(Error::invalid(
                "concurrency",
                format!("must be at most {MAX_CONCURRENCY}"),
            ));
        }
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
            None => self.concurrency.min(limits.max_pop).max(1),
        };
        if self
            .pop_concurrency
            .is_some_and(|n| !(1..=MAX_POP_CONCURRENCY).contains(&n))
        {
            return Err(Error::invalid(
                "pop_concurrency",
                format!("must be between 1 and {MAX_POP_CONCURRENCY}"),
            ));
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
        let Some(handler) = self.handler else {
            return Err(Error::invalid(
                "handler",
                "must be set with handler, handler_fn or typed",
            ));
        };
        Ok(Worker {
            queue: self.queue,
            handler,
            scheduler: self.scheduler,
            config: Config {
                queue_name: self.queue_name,
                worker_id,
                concurrency: self.concurrency,
                prefetch,
                pop_concurrency: self.pop_concurrency,
                lease: self.lease,
                heartbeat,
                poll_min: self.poll_min,
                poll_max: self.poll_max,
                rescue_interval: self.rescue_interval,
                ack_batch,
                shutdown_timeout: self.shutdown_timeout,
                job_timeout: self.job_timeout,
            },
        })
    }
}
