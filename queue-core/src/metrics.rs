//! Metrics through the [`metrics`] facade: the application installs the recorder (a Prometheus
//! exporter, OpenTelemetry, StatsD, ...) and the queue reports to it.
//!
//! | name | type | labels | what |
//! |---|---|---|---|
//! | `dbqueue_jobs_pushed_total` | counter | `queue`, `kind` | jobs stored by a push or by a schedule (a unique job that met the holder of its key is not counted; inside a caller's transaction, counted when the insert ran) |
//! | `dbqueue_jobs_claimed_total` | counter | `queue` | jobs given out by claims |
//! | `dbqueue_claim_seconds` | histogram | `queue` | how long a claim took, the round trips to the database included |
//! | `dbqueue_jobs_completed_total` | counter | `queue`, `kind` | jobs a worker ran to success and handed to the database as completed (acknowledgements are batched: a lease found lost at that point is counted in `dbqueue_jobs_lease_lost_total` too; one the database could not take is rescued when its lease expires) |
//! | `dbqueue_jobs_failed_total` | counter | `queue`, `kind` | failed attempts recorded by a worker (each also counted as retried or dead) |
//! | `dbqueue_jobs_retried_total` | counter | `queue`, `kind` | failed jobs sent back to pending for another attempt |
//! | `dbqueue_jobs_dead_total` | counter | `queue`, `kind` | failed jobs that went dead (permanent failure, or attempts used up) |
//! | `dbqueue_jobs_snoozed_total` | counter | `queue`, `kind` | jobs a handler snoozed (back to pending, the attempt not spent) |
//! | `dbqueue_jobs_cancelled_total` | counter | `queue` | jobs cancelled through this queue value (`cancel`, or a bulk cancel: one over several queues counts its jobs with an empty `queue`) |
//! | `dbqueue_jobs_lease_lost_total` | counter | `queue` | jobs whose lease was lost or that were cancelled while a worker held them |
//! | `dbqueue_job_run_seconds` | histogram | `queue`, `kind` | how long the handler ran |
//! | `dbqueue_job_wait_seconds` | histogram | `queue`, `kind` | from when the job was due to when it was claimed, by the database's clock |
//! | `dbqueue_queue_jobs` | gauge | `queue`, `state` | jobs per state (`available`, `scheduled`, `running`, `completed`, `dead`, `cancelled`; finished states up to the stats count cap), set by [`record_queue_gauges`] |
//! | `dbqueue_queue_oldest_due_seconds` | gauge | `queue` | how long the longest-waiting available job has been due (0 when none is), by the database's clock, set by [`record_queue_gauges`] |
//!
//! The two gauges are the database's numbers, not a process's: one process sets them, either
//! `queue serve` at each scrape of its `/metrics`, or the one worker that holds the sampler's
//! lease ([`crate::WorkerBuilder::queue_gauges`]).
//!
//! Handles are registered with the recorder installed when a queue value or worker first sees a
//! queue and kind, and kept: install the recorder before building them. Without a recorder
//! each event is one lookup of the kept handle and a call that does nothing.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Once};

use ::metrics::{Counter, Histogram};

use crate::queue::Queue;

/// Jobs stored by a push.
pub const JOBS_PUSHED: &str = "dbqueue_jobs_pushed_total";
/// Jobs given out by claims.
pub const JOBS_CLAIMED: &str = "dbqueue_jobs_claimed_total";
/// How long a claim took.
pub const CLAIM_SECONDS: &str = "dbqueue_claim_seconds";
/// Jobs run to success and handed to the database as completed.
pub const JOBS_COMPLETED: &str = "dbqueue_jobs_completed_total";
/// Failed attempts.
pub const JOBS_FAILED: &str = "dbqueue_jobs_failed_total";
/// Failed jobs sent back for another attempt.
pub const JOBS_RETRIED: &str = "dbqueue_jobs_retried_total";
/// Failed jobs that went dead.
pub const JOBS_DEAD: &str = "dbqueue_jobs_dead_total";
/// Jobs snoozed by their handler.
pub const JOBS_SNOOZED: &str = "dbqueue_jobs_snoozed_total";
/// Jobs cancelled.
pub const JOBS_CANCELLED: &str = "dbqueue_jobs_cancelled_total";
/// Jobs whose lease was lost while a worker held them.
pub const JOBS_LEASE_LOST: &str = "dbqueue_jobs_lease_lost_total";
/// How long handlers ran.
pub const JOB_RUN_SECONDS: &str = "dbqueue_job_run_seconds";
/// From due to claimed.
pub const JOB_WAIT_SECONDS: &str = "dbqueue_job_wait_seconds";
/// Jobs per queue and state.
pub const QUEUE_JOBS: &str = "dbqueue_queue_jobs";
/// How long the longest-waiting available job of a queue has been due.
pub const QUEUE_OLDEST_DUE_SECONDS: &str = "dbqueue_queue_oldest_due_seconds";

/// Describes every metric to the recorder installed now (help texts and units), once per
/// process. Called when the first handles are registered; an exporter installed later learns
/// the descriptions when this is called again after it.
pub fn describe() {
    use ::metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(JOBS_PUSHED, Unit::Count, "Jobs stored by a push");
    describe_counter!(JOBS_CLAIMED, Unit::Count, "Jobs given out by claims");
    describe_histogram!(
        CLAIM_SECONDS,
        Unit::Seconds,
        "How long a claim took, its round trips to the database included"
    );
    describe_counter!(
        JOBS_COMPLETED,
        Unit::Count,
        "Jobs run to success and handed to the database as completed"
    );
    describe_counter!(JOBS_FAILED, Unit::Count, "Failed attempts");
    describe_counter!(
        JOBS_RETRIED,
        Unit::Count,
        "Failed jobs sent back to pending for another attempt"
    );
    describe_counter!(JOBS_DEAD, Unit::Count, "Failed jobs that went dead");
    describe_counter!(JOBS_SNOOZED, Unit::Count, "Jobs snoozed by their handler");
    describe_counter!(JOBS_CANCELLED, Unit::Count, "Jobs cancelled");
    describe_counter!(
        JOBS_LEASE_LOST,
        Unit::Count,
        "Jobs whose lease was lost or that were cancelled while a worker held them"
    );
    describe_histogram!(JOB_RUN_SECONDS, Unit::Seconds, "How long the handler ran");
    describe_histogram!(
        JOB_WAIT_SECONDS,
        Unit::Seconds,
        "From when the job was due to when it was claimed (the database's clock)"
    );
    describe_gauge!(QUEUE_JOBS, Unit::Count, "Jobs per queue and state");
    describe_gauge!(
        QUEUE_OLDEST_DUE_SECONDS,
        Unit::Seconds,
        "How long the longest-waiting available job has been due (0: none is)"
    );
}

static DESCRIBED: Once = Once::new();

/// The queues whose gauges [`record_queue_gauges`] set last time. One set per process: the
/// gauges are named by queue, so one process exports the queues of one database.
static GAUGED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// The label of a job without a kind.
const NO_KIND: &str = "";

/// The handles of one queue and kind.
pub(crate) struct JobMetrics {
    pub(crate) pushed: Counter,
    pub(crate) completed: Counter,
    pub(crate) failed: Counter,
    pub(crate) retried: Counter,
    pub(crate) dead: Counter,
    pub(crate) snoozed: Counter,
    pub(crate) run: Histogram,
    pub(crate) wait: Histogram,
    /// The kind these handles are of (for the worker's events).
    pub(crate) kind: Option<String>,
}

/// The handles of one queue's claims.
pub(crate) struct QueueMetrics {
    pub(crate) claimed: Counter,
    pub(crate) claim: Histogram,
}

/// Handles registered so far, by queue (and kind): each registered once, then only looked up.
#[derive(Default)]
pub(crate) struct Handles {
    jobs: Mutex<HashMap<String, HashMap<String, Arc<JobMetrics>>>>,
    queues: Mutex<HashMap<String, Arc<QueueMetrics>>>,
    lost: Mutex<HashMap<String, Counter>>,
    cancelled: Mutex<HashMap<String, Counter>>,
}

impl Handles {
    /// The handles of `queue` and `kind`.
    pub(crate) fn job(&self, queue: &str, kind_name: Option<&str>) -> Arc<JobMetrics> {
        let kind = kind_name.unwrap_or(NO_KIND);
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = jobs.get(queue).and_then(|kinds| kinds.get(kind).cloned()) {
            return m;
        }
        DESCRIBED.call_once(describe);
        let labels = [("queue", queue.to_owned()), ("kind", kind.to_owned())];
        let m = Arc::new(JobMetrics {
            pushed: ::metrics::counter!(JOBS_PUSHED, &labels),
            completed: ::metrics::counter!(JOBS_COMPLETED, &labels),
            failed: ::metrics::counter!(JOBS_FAILED, &labels),
            retried: ::metrics::counter!(JOBS_RETRIED, &labels),
            dead: ::metrics::counter!(JOBS_DEAD, &labels),
            snoozed: ::metrics::counter!(JOBS_SNOOZED, &labels),
            run: ::metrics::histogram!(JOB_RUN_SECONDS, &labels),
            wait: ::metrics::histogram!(JOB_WAIT_SECONDS, &labels),
            kind: kind_name.map(str::to_owned),
        });
        jobs.entry(queue.to_owned())
            .or_default()
            .insert(kind.to_owned(), m.clone());
        m
    }

    /// The handles of `queue`.
    pub(crate) fn queue(&self, queue: &str) -> Arc<QueueMetrics> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = queues.get(queue) {
            return m.clone();
        }
        DESCRIBED.call_once(describe);
        let labels = [("queue", queue.to_owned())];
        let m = Arc::new(QueueMetrics {
            claimed: ::metrics::counter!(JOBS_CLAIMED, &labels),
            claim: ::metrics::histogram!(CLAIM_SECONDS, &labels),
        });
        queues.insert(queue.to_owned(), m.clone());
        m
    }

    /// The cancelled counter of `queue` (`""`: a bulk cancel over several queues).
    pub(crate) fn cancelled(&self, queue: &str) -> Counter {
        let mut cancelled = self.cancelled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cancelled.get(queue) {
            return c.clone();
        }
        DESCRIBED.call_once(describe);
        let c = ::metrics::counter!(JOBS_CANCELLED, "queue" => queue.to_owned());
        cancelled.insert(queue.to_owned(), c.clone());
        c
    }

    /// The lease-lost counter of `queue` (`""`: a batch of acknowledgements of several queues).
    pub(crate) fn lease_lost(&self, queue: &str) -> Counter {
        let mut lost = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = lost.get(queue) {
            return c.clone();
        }
        DESCRIBED.call_once(describe);
        let c = ::metrics::counter!(JOBS_LEASE_LOST, "queue" => queue.to_owned());
        lost.insert(queue.to_owned(), c.clone());
        c
    }
}

/// Sets every queue gauge that [`record_queue_gauges`] set in this process to 0: called by a
/// sampler that stops sampling (it lost the lease, or its worker stops), so that its exporter
/// does not keep numbers that the process that samples now exports too.
pub fn clear_queue_gauges() {
    let queues = GAUGED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_default();
    for queue in queues {
        zero(queue);
    }
}

/// Sets the gauges of `queue` to 0.
fn zero(queue: String) {
    for state in STATES {
        ::metrics::gauge!(QUEUE_JOBS, "queue" => queue.clone(), "state" => state).set(0.0);
    }
    ::metrics::gauge!(QUEUE_OLDEST_DUE_SECONDS, "queue" => queue).set(0.0);
}

/// The `state` labels of `dbqueue_queue_jobs`.
const STATES: [&str; 6] = [
    "available",
    "scheduled",
    "running",
    "completed",
    "dead",
    "cancelled",
];

/// Sets `dbqueue_queue_jobs` and `dbqueue_queue_oldest_due_seconds` for every queue from one
/// [`Queue::stats`] call and one read of the database's clock: how many jobs each queue has per
/// state, and how long its oldest available job has waited, as the database says now. Call it
/// from one process (the one that serves `/metrics`, or the worker that holds the sampler's
/// lease, [`crate::WorkerBuilder::queue_gauges`]): every process that calls it exports the
/// same numbers, so a sum across processes would count them again. `queue serve` calls it at
/// each scrape of its `/metrics`.
///
/// # Errors
/// As [`Queue::stats`] and [`Queue::now`].
pub async fn record_queue_gauges(queue: &dyn Queue) -> crate::Result<()> {
    DESCRIBED.call_once(describe);
    let stats = queue.stats(None).await?;
    let now = queue.now().await?;
    // A queue set before and gone from the stats now (its last jobs deleted) reads 0, not the
    // numbers it had then.
    let gone: Vec<String> = {
        let mut seen = GAUGED.lock().unwrap_or_else(|e| e.into_inner());
        let now_seen: HashSet<String> = stats.iter().map(|s| s.queue.clone()).collect();
        let before = seen.replace(now_seen).unwrap_or_default();
        before
            .into_iter()
            .filter(|q| !stats.iter().any(|s| &s.queue == q))
            .collect()
    };
    for queue in gone {
        zero(queue);
    }
    for s in stats {
        let counts = [
            s.available,
            s.scheduled,
            s.running,
            s.completed,
            s.dead,
            s.cancelled,
        ];
        for (state, n) in STATES.into_iter().zip(counts) {
            ::metrics::gauge!(QUEUE_JOBS, "queue" => s.queue.clone(), "state" => state)
                .set(n as f64);
        }
        let waited = s
            .oldest_due
            .and_then(|due| (now - due).to_std().ok())
            .unwrap_or_default();
        ::metrics::gauge!(QUEUE_OLDEST_DUE_SECONDS, "queue" => s.queue.clone())
            .set(waited.as_secs_f64());
    }
    Ok(())
}
