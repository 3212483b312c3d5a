//! Draining inline: a worker's handlers run every due job of its queues, one at a time, in the
//! caller's task, and say what became of each ([`Worker::drain`](super::Worker::drain)). The
//! same code runs them as in a started worker (routing by kind, timeouts, panics caught, the
//! kinds' retry policies, snoozes, recorded outputs, acknowledgements), only without the
//! dispatchers, the buffer and the background tasks: for tests of handlers, and for one-shot
//! runs (a command that works off what is due and exits).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;

use super::counters::{Counters, CountersSnapshot};
use super::dispatch::Buffered;
use super::events::EventHub;
use super::registry::Registry;
use super::runtime::{flush, run_job, AckQueue, Shared};
use super::Config;
use crate::error::Result;
use crate::job::{Job, JobId};
use crate::queue::{PopRequest, Queue};

/// What became of a job an inline drain ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunOutcome {
    /// The handler succeeded and the job is completed.
    Completed,
    /// The handler failed (or panicked, or timed out, or no handler runs its kind) and the job
    /// waits for another attempt.
    Retried,
    /// The handler failed for good, or the job's attempts are used up: it is dead.
    Dead,
    /// The handler snoozed the job: it waits, its attempt not spent.
    Snoozed,
    /// The job was cancelled (or its lease lost) while its handler ran.
    LeaseLost,
    /// The outcome could not be recorded (a database error): the job is left running until
    /// its lease expires and it is rescued.
    Abandoned,
}

impl RunOutcome {
    /// What the worker's counters say happened between `before` and `after`.
    fn between(before: &CountersSnapshot, after: &CountersSnapshot) -> RunOutcome {
        if after.completed > before.completed {
            RunOutcome::Completed
        } else if after.dead > before.dead {
            RunOutcome::Dead
        } else if after.retried > before.retried {
            RunOutcome::Retried
        } else if after.snoozed > before.snoozed {
            RunOutcome::Snoozed
        } else if after.lease_lost > before.lease_lost {
            RunOutcome::LeaseLost
        } else {
            RunOutcome::Abandoned
        }
    }
}

/// One job an inline drain ran.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DrainedJob {
    /// Its id.
    pub id: JobId,
    /// Its queue.
    pub queue: String,
    /// Its kind, if it has one.
    pub kind: Option<String>,
    /// The attempt this run was.
    pub attempt: u32,
    /// What became of it.
    pub outcome: RunOutcome,
    /// The job as stored after the run (its state, errors, output and meta); `None` when it no
    /// longer exists or could not be read.
    pub after: Option<Job>,
}

/// What an inline drain did, in the order the jobs ran.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Drained {
    /// Each job run, in order (a job that ran twice, retried and then completed, is here twice).
    pub jobs: Vec<DrainedJob>,
    /// The drain ran as many jobs as its limit allows and stopped there: jobs may still be due
    /// (a drain that ends because nothing is due leaves it false).
    pub stopped_at_limit: bool,
}

impl Drained {
    /// How many runs ended with `outcome`.
    pub fn count(&self, outcome: RunOutcome) -> usize {
        self.jobs.iter().filter(|j| j.outcome == outcome).count()
    }

    /// How many runs there were.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether nothing was due.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The runs of job `id`, in order.
    pub fn runs_of(&self, id: JobId) -> impl Iterator<Item = &DrainedJob> {
        self.jobs.iter().filter(move |j| j.id == id)
    }
}

/// Runs due jobs of `config`'s queues one at a time through `registry` until none is due (jobs
/// that the handlers push and that are due at once run too), or `limit` jobs have run.
pub(super) async fn drain(
    queue: Arc<dyn Queue>,
    registry: Arc<Registry>,
    config: Config,
    events: EventHub,
    limit: usize,
) -> Result<Drained> {
    // Never set: an inline run has no shutdown deadline.
    let (_abort, abort) = watch::channel(false);
    let (_stop, stopping) = watch::channel(false);
    let counters = Arc::new(Counters::default());
    let shared = Arc::new(Shared {
        queue,
        registry,
        config,
        counters: counters.clone(),
        acks: AckQueue::default(),
        abort,
        stopping,
        running: None,
        cancel_watch: watch::Sender::new(true),
        lanes: std::sync::Mutex::new(Default::default()),
        slots: std::sync::atomic::AtomicUsize::new(1),
        aborted: AtomicU64::new(0),
        metrics: crate::metrics::Handles::default(),
        claiming: std::sync::atomic::AtomicUsize::new(0),
        events,
    });
    let slot = Arc::new(Semaphore::new(1));
    let mut drained = Drained::default();
    loop {
        let mut ran_any = false;
        for q in &shared.config.queues {
            if drained.jobs.len() >= limit {
                drained.stopped_at_limit = true;
                return Ok(drained);
            }
            let request = PopRequest {
                queue: q.name.clone(),
                limit: 1,
                lease: shared.config.lease,
                worker: shared.config.worker_id.clone(),
            };
            let Some(leased) = shared.queue.pop(request).await?.pop() else {
                continue;
            };
            ran_any = true;
            counters.add_claimed(1);
            let (id, queue_name, kind, attempt) = (
                leased.lease.job_id,
                leased.lease.queue.clone(),
                leased.job.kind.clone(),
                leased.lease.attempt,
            );
            let before = counters.snapshot();
            let permit = slot
                .clone()
                .acquire_owned()
                .await
                .expect("the inline drain's semaphore is never closed");
            run_job(
                shared.clone(),
                Buffered {
                    leased,
                    claimed_at: Instant::now(),
                },
                permit,
                shared.abort.clone(),
            )
            .await;
            let completed = shared.acks.take(usize::MAX);
            if !completed.is_empty() {
                flush(&shared, &completed).await;
            }
            let outcome = RunOutcome::between(&before, &counters.snapshot());
            drained.jobs.push(DrainedJob {
                id,
                queue: queue_name,
                kind,
                attempt,
                outcome,
                // A read that fails leaves the report of what ran so far intact.
                after: shared.queue.get(id).await.ok().flatten(),
            });
        }
        if !ran_any {
            return Ok(drained);
        }
    }
}
