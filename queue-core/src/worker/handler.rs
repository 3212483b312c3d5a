//! What a worker runs for each job: the [`Handler`] trait, the [`JobContext`] it receives and
//! the [`JobError`] it returns.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use serde::de::DeserializeOwned;

use serde_json::value::RawValue;

use super::cancel::{CancelReason, CancelSignal};
use super::middleware::Extensions;
use crate::job::{Failure, FailureKind, Job, JobId, Lease};
use crate::queue::Queue;

/// Runs one job. Implemented for closures through [`super::WorkerBuilder::handler_fn`] and
/// [`super::WorkerBuilder::typed`]; implement it directly for handlers that carry state.
///
/// `Ok(())` completes the job; an [`Err`] records a failure (retried or dead, as the
/// [`JobError`] says). A panic is caught and recorded as a retryable failure.
pub trait Handler: Send + Sync + 'static {
    /// Starts running the job described by `ctx`.
    fn call(&self, ctx: JobContext) -> BoxFuture<'static, Result<(), JobError>>;
}

/// The current lease of a running job, shared between its handler and the heartbeat that
/// extends it, and what the handler recorded for its completion.
#[derive(Debug)]
pub(crate) struct LeaseCell {
    lease: Mutex<Lease>,
    /// The handler completed the job itself (in its own transaction).
    completed: std::sync::atomic::AtomicBool,
    /// The output the handler recorded, stored with the completion.
    output: Mutex<Option<Box<RawValue>>>,
    /// Why the worker asks the handler to stop, once it does.
    pub(crate) cancel: CancelSignal,
    /// Asks the heartbeat to extend the lease now (a cancel may have been sent).
    pub(crate) poke: tokio::sync::Notify,
}

impl LeaseCell {
    pub(crate) fn new(lease: Lease) -> Self {
        LeaseCell {
            lease: Mutex::new(lease),
            completed: std::sync::atomic::AtomicBool::new(false),
            output: Mutex::new(None),
            cancel: CancelSignal::default(),
            poke: tokio::sync::Notify::new(),
        }
    }

    /// The output the handler recorded last, taken out.
    pub(crate) fn take_output(&self) -> Option<Box<RawValue>> {
        self.output.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    pub(crate) fn get(&self) -> Lease {
        self.lease.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set(&self, lease: Lease) {
        *self.lease.lock().unwrap_or_else(|e| e.into_inner()) = lease;
    }

    /// Whether the handler said it completed the job itself.
    pub(crate) fn completed_by_handler(&self) -> bool {
        self.completed.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// What a handler knows about the job it runs, and what it can do to it while it holds the
/// lease: merge metadata, record an output.
pub struct JobContext {
    /// The job as claimed: payload, kind, metadata, attempts, timestamps.
    pub job: Job,
    lease: Arc<LeaseCell>,
    queue: Arc<dyn Queue>,
    extensions: Extensions,
}

impl fmt::Debug for JobContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobContext")
            .field("job", &self.job)
            .field("lease", &self.lease)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

impl JobContext {
    pub(crate) fn new(job: Job, lease: Arc<LeaseCell>, queue: Arc<dyn Queue>) -> Self {
        JobContext {
            job,
            lease,
            queue,
            extensions: Extensions::default(),
        }
    }

    /// The values middleware added to this run ([`super::Middleware`]).
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The values of this run, to add to (middleware does, before it runs the rest of its
    /// chain).
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }

    /// Waits until the worker asks this run to stop, and says why: an operator cancelled the
    /// job, the lease was lost, the run timed out, or the worker is shutting down. A handler
    /// that can stop early races its work against it (`tokio::select!`). After a cancel, a
    /// lost lease or a timeout the handler has the worker's `cancel_grace` to return (what it
    /// returns is not recorded: the job is not its own any more, or has timed out); then it is
    /// stopped. After a shutdown, what it returns before the shutdown deadline is recorded as
    /// usual.
    pub async fn cancelled(&self) -> CancelReason {
        self.lease.cancel.wait().await
    }

    /// Whether the worker has asked this run to stop ([`JobContext::cancelled`]).
    pub fn is_cancelled(&self) -> bool {
        self.lease.cancel.reason().is_some()
    }

    /// Why the worker asked this run to stop, if it has.
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        self.lease.cancel.reason()
    }

    /// The job's kind, if it has one.
    pub fn kind(&self) -> Option<&str> {
        self.job.kind.as_deref()
    }

    /// Merges `patch` (a JSON object) into the job's metadata in the database, by the rules of
    /// JSON Merge Patch (objects merge key by key, `null` removes a key), fenced by this job's
    /// lease: e.g. `ctx.merge_meta(json!({"progress": 40})).await?` to record progress. Returns
    /// the metadata as stored. `ctx.job.meta` keeps the value the job was claimed with.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming `meta` when `patch` is not an
    /// object or the metadata would grow past the queue's `max_meta_bytes`;
    /// [`Error::LeaseLost`](crate::Error::LeaseLost) or [`Error::Cancelled`](crate::Error::Cancelled)
    /// when the job is no longer this handler's.
    pub async fn merge_meta(&self, patch: serde_json::Value) -> crate::Result<serde_json::Value> {
        self.queue.merge_meta(&self.lease(), &patch).await
    }

    /// Records `output` to be stored with the job's completion (in the same statement) and
    /// returned by `get` as [`Job::output`]; a later call replaces an earlier one. Nothing is
    /// stored if the handler then fails.
    ///
    /// # Errors
    /// A permanent [`JobError`] (the same output would be refused at every attempt): when its
    /// JSON is larger than the queue's `max_output_bytes` (the message names `output` and the
    /// limit), or when it cannot be serialized. A handler that returns it with `?` makes the job
    /// dead; one that can record something smaller may do so instead.
    pub fn record_output(&self, output: &impl serde::Serialize) -> Result<(), JobError> {
        let raw = serde_json::value::to_raw_value(output).map_err(|e| {
            JobError::permanent(format!("the output does not serialize as JSON: {e}"))
        })?;
        crate::validate::output(raw.get(), &self.queue.capabilities().limits)
            .map_err(|e| JobError::permanent(e.to_string()))?;
        *self.lease.output.lock().unwrap_or_else(|e| e.into_inner()) = Some(raw);
        Ok(())
    }

    /// What this job depends on (a step of a workflow), each with its step name, state and
    /// recorded output; empty for a job without dependencies. Read from the database at each
    /// call.
    ///
    /// # Errors
    /// As [`Queue::dependencies`].
    pub async fn dependencies(&self) -> crate::Result<Vec<crate::Dependency>> {
        if self.job.workflow.is_none() {
            return Ok(Vec::new());
        }
        self.queue.dependencies(self.job.id).await
    }

    /// The output recorded by the dependency named `step`, deserialized; `None` when it
    /// recorded none or this job has no such dependency.
    ///
    /// # Errors
    /// A retryable [`JobError`] when the dependencies cannot be read; a permanent one when the
    /// output does not fit `T`.
    pub async fn dependency_output<T: DeserializeOwned>(
        &self,
        step: &str,
    ) -> Result<Option<T>, JobError> {
        let deps = self
            .dependencies()
            .await
            .map_err(|e| JobError::retryable(e.to_string()))?;
        let Some(dep) = deps.into_iter().find(|d| d.step == step) else {
            return Ok(None);
        };
        dep.output::<T>().map_err(|e| {
            JobError::permanent(format!(
                "the output of step {step:?} does not deserialize into {}: {e}",
                std::any::type_name::<T>()
            ))
        })
    }

    /// How the jobs this one depends on ended: for a batch's callback, how many members
    /// completed, died or were cancelled.
    ///
    /// # Errors
    /// As [`Queue::dependencies`].
    pub async fn batch_counts(&self) -> crate::Result<crate::BatchCounts> {
        Ok(crate::BatchCounts::of(&self.dependencies().await?))
    }

    /// The job's id.
    pub fn id(&self) -> JobId {
        self.job.id
    }

    /// Which attempt this is (1 for the first claim).
    pub fn attempt(&self) -> u32 {
        self.job.attempts
    }

    /// Whether a retryable failure of this attempt would make the job dead.
    pub fn is_last_attempt(&self) -> bool {
        self.job.attempts >= self.job.max_attempts
    }

    /// The current lease; the heartbeat replaces it whenever it extends the claim, so this is
    /// the lease to present when completing the job by other means (e.g. in the caller's own
    /// transaction).
    pub fn lease(&self) -> Lease {
        self.lease.get()
    }

    /// Tells the worker that the handler completed the job itself, with the backend's
    /// `complete_in_tx` inside the transaction of its own writes (exactly-once effects). When
    /// the handler then returns `Ok(())`, the worker counts the job completed and sends no
    /// acknowledgement of its own (which would find the lease spent). Call it after the
    /// transaction committed; a handler that returns an error is failed as usual. For a job of
    /// a workflow, the worker then settles the jobs waiting for it
    /// ([`Queue::settle_dependents`]).
    pub fn mark_completed(&self) {
        self.lease
            .completed
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Deserializes the payload into `T`.
    ///
    /// # Errors
    /// A permanent [`JobError`] naming `T` when the JSON does not fit it.
    pub fn payload<T: DeserializeOwned>(&self) -> Result<T, JobError> {
        serde_json::from_str(self.job.payload.get()).map_err(|e| {
            JobError::permanent(format!(
                "payload does not deserialize into {}: {e}",
                std::any::type_name::<T>()
            ))
        })
    }
}

/// Why a handler failed, and whether another attempt may help; or its request to run the job
/// again later ([`JobError::snooze`]).
///
/// Any error type converts into a retryable `JobError` with `?` (its message is the error and
/// its sources); use [`JobError::permanent`] when no retry can succeed and
/// [`JobError::retry_after`] to choose the delay.
pub struct JobError {
    message: String,
    kind: FailureKind,
    /// A snooze rather than a failure.
    snooze: Option<Duration>,
}

impl JobError {
    /// A failure that is retried after the backoff of the job's kind (or the queue's), while
    /// attempts remain.
    pub fn retryable(message: impl Into<String>) -> Self {
        JobError {
            message: message.into(),
            kind: FailureKind::Retryable,
            snooze: None,
        }
    }

    /// A failure that is retried after exactly `delay`, while attempts remain.
    pub fn retry_after(message: impl Into<String>, delay: Duration) -> Self {
        JobError {
            message: message.into(),
            kind: FailureKind::RetryAfter(delay),
            snooze: None,
        }
    }

    /// A failure that no retry can fix: the job goes dead at once.
    pub fn permanent(message: impl Into<String>) -> Self {
        JobError {
            message: message.into(),
            kind: FailureKind::Permanent,
            snooze: None,
        }
    }

    /// Not a failure: run the job again after `delay`, without spending an attempt (e.g. a
    /// resource it needs is busy). The snooze is counted in [`Job::snoozes`]; past the kind's
    /// `max_snoozes` (the worker's, by default [`super::DEFAULT_MAX_SNOOZES`]) a snooze is
    /// recorded as a failed attempt instead, so a job cannot snooze forever.
    pub fn snooze(delay: Duration) -> Self {
        JobError {
            message: format!("snoozed for {delay:?}"),
            kind: FailureKind::RetryAfter(delay),
            snooze: Some(delay),
        }
    }

    /// The delay of a snooze, `None` for a failure.
    pub fn snoozed(&self) -> Option<Duration> {
        self.snooze
    }

    /// The message recorded as the job's `last_error`.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether and when the job may be retried.
    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// Whether the failure is permanent.
    pub fn is_permanent(&self) -> bool {
        self.kind == FailureKind::Permanent
    }

    /// The [`Failure`] the worker reports to the queue.
    pub fn into_failure(self) -> Failure {
        Failure {
            message: self.message,
            kind: self.kind,
        }
    }
}

impl fmt::Debug for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobError")
            .field("message", &self.message)
            .field("kind", &self.kind)
            .field("snooze", &self.snooze)
            .finish()
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(d) = self.snooze {
            return write!(f, "job snoozed for {d:?}");
        }
        let kind = match self.kind {
            FailureKind::Retryable => "retryable",
            FailureKind::RetryAfter(_) => "retry later",
            FailureKind::Permanent => "permanent",
        };
        write!(f, "{kind} job failure: {}", self.message)
    }
}

/// `?` on any error makes a retryable failure whose message is the error and its sources.
impl<E> From<E> for JobError
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(e: E) -> Self {
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        JobError::retryable(message)
    }
}

/// A handler made from a closure taking the [`JobContext`].
pub(crate) struct FnHandler<F>(pub(crate) F);

impl<F, Fut> Handler for FnHandler<F>
where
    F: Fn(JobContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), JobError>> + Send + 'static,
{
    fn call(&self, ctx: JobContext) -> BoxFuture<'static, Result<(), JobError>> {
        (self.0)(ctx).boxed()
    }
}

/// A handler made from a closure taking the deserialized payload and the [`JobContext`]. A
/// payload that does not deserialize into `T` is a permanent failure: no retry changes it.
pub(crate) struct TypedHandler<T, F> {
    pub(crate) f: F,
    pub(crate) _payload: PhantomData<fn() -> T>,
}

impl<T, F, Fut> Handler for TypedHandler<T, F>
where
    T: DeserializeOwned + Send + 'static,
    F: Fn(T, JobContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), JobError>> + Send + 'static,
{
    fn call(&self, ctx: JobContext) -> BoxFuture<'static, Result<(), JobError>> {
        match ctx.payload::<T>() {
            Ok(payload) => (self.f)(payload, ctx).boxed(),
            Err(e) => futures::future::ready(Err(e)).boxed(),
        }
    }
}
