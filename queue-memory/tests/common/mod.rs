//! Shared by the worker's test programs: a store on Tokio's clock seen by two queue values (the
//! worker's, whose faults are the worker's trouble with its database, and another process's,
//! through which a test pushes, looks and acts beside the worker), waits in Tokio's time, and
//! handlers.
#![allow(dead_code)] // each test program uses its own part

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dbqueue_memory::{Faults, MemoryQueue, Statement, Statements};
use queue_core::worker::{JobContext, JobError, Worker, WorkerBuilder};
use queue_core::{Error, Job, JobId, JobState, Limits, NewJob, Queue, QueueStats};

/// The queue the workers claim from.
pub(crate) const Q: &str = "work";

/// The statements that claim jobs for a worker: a claim, or a claim that carries completions.
pub(crate) const CLAIMS: Statements =
    Statements::of(&[Statement::JobClaim, Statement::JobCompleteAndClaim]);

/// The statements that complete jobs in batches: the acknowledger's, and the completions a
/// claim carries.
pub(crate) const BATCH_ACKS: Statements =
    Statements::of(&[Statement::JobCompleteMany, Statement::JobCompleteAndClaim]);

/// A store on Tokio's clock (leases, run times and rescues move with the test's paused time),
/// migrated, with two queue values on it.
pub(crate) struct Db {
    /// The worker's queue value.
    pub(crate) queue: MemoryQueue,
    /// Its faults and counts: what the worker's statements meet, and how many it ran.
    pub(crate) faults: Faults,
    /// Another process's queue value on the same store: never struck by `faults`, and never
    /// counted in them.
    pub(crate) other: MemoryQueue,
}

impl Db {
    /// A new store with the default limits.
    pub(crate) async fn new() -> Db {
        Db::with_limits(Limits::default()).await
    }

    /// A new store whose queue values have `limits`.
    pub(crate) async fn with_limits(limits: Limits) -> Db {
        let name = format!("worker-test-{}", uuid::Uuid::new_v4());
        let open = || {
            MemoryQueue::builder()
                .name(&name)
                .tokio_clock()
                .limits(limits.clone())
                .connect()
        };
        let queue = open().await.unwrap();
        queue.migrate().await.unwrap();
        let other = open().await.unwrap();
        let faults = queue.faults();
        Db {
            queue,
            faults,
            other,
        }
    }

    /// The worker's queue value, as a worker takes it.
    pub(crate) fn dyn_queue(&self) -> Arc<dyn Queue> {
        Arc::new(self.queue.clone())
    }

    /// A worker of queue [`Q`] on the worker's queue value.
    pub(crate) fn builder(&self) -> WorkerBuilder {
        Worker::builder(self.dyn_queue(), Q)
    }

    /// Pushes `n` jobs of queue [`Q`] with `payload` through the worker's queue value (which
    /// wakes its waiting worker at once), in batches as large as the queue takes.
    pub(crate) async fn push_n(&self, n: usize, payload: serde_json::Value) -> Vec<JobId> {
        let max = self.queue.capabilities().limits.max_batch;
        let mut ids = Vec::with_capacity(n);
        while ids.len() < n {
            let jobs = (0..(n - ids.len()).min(max))
                .map(|_| NewJob::new(Q, &payload).unwrap())
                .collect();
            ids.extend(self.queue.push_batch(jobs).await.unwrap());
        }
        ids
    }

    /// Pushes one job through the worker's queue value.
    pub(crate) async fn push(&self, job: NewJob) -> JobId {
        self.queue.push(job).await.unwrap()
    }

    /// The stored job, as the other process reads it.
    pub(crate) async fn job(&self, id: JobId) -> Job {
        self.other
            .get(id)
            .await
            .unwrap()
            .expect("the job is stored")
    }

    /// The counts of queue `queue`, as the other process reads them.
    pub(crate) async fn stats_of(&self, queue: &str) -> QueueStats {
        self.other
            .stats(Some(queue))
            .await
            .unwrap()
            .into_iter()
            .next()
            .unwrap_or_default()
    }

    /// How many jobs of queue [`Q`] are in `state`.
    pub(crate) async fn count(&self, state: JobState) -> u64 {
        self.stats_of(Q).await.count(state)
    }

    /// The store's clock now.
    pub(crate) async fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.other.now().await.unwrap()
    }
}

/// Waits (in Tokio's time) until `cond` holds; panics after `limit`.
pub(crate) async fn until(limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// [`until`] for a condition that reads the store.
pub(crate) async fn until_stored<F, Fut>(limit: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !cond().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A handler that completes every job at once.
pub(crate) fn noop() -> impl Fn(JobContext) -> std::future::Ready<Result<(), JobError>> {
    |_ctx| std::future::ready(Ok(()))
}

/// A boxed handler future.
pub(crate) type Run = Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>>;

/// A handler that runs for an hour, and sets `dropped` when its future is dropped (stopped).
pub(crate) fn forever(dropped: Arc<AtomicBool>) -> impl Fn(JobContext) -> Run {
    move |_ctx| {
        let flag = DropFlag(dropped.clone());
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(flag);
            Ok(())
        })
    }
}

/// A handler that completes each job once `gate` is notified (`notify_waiters` lets every
/// waiting one through).
pub(crate) fn gated(gate: Arc<tokio::sync::Notify>) -> impl Fn(JobContext) -> Run {
    move |_ctx| {
        let gate = gate.clone();
        Box::pin(async move {
            gate.notified().await;
            Ok(())
        })
    }
}

/// Sets its flag when dropped.
pub(crate) struct DropFlag(pub(crate) Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The field an [`Error::InvalidInput`] names.
pub(crate) fn field_of(err: Error) -> String {
    match err {
        Error::InvalidInput { field, .. } => field,
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

/// The args of the kind `ping`.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Ping {
    pub(crate) n: u32,
}

impl queue_core::JobArgs for Ping {
    const KIND: &'static str = "ping";
}
