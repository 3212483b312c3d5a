//! Helpers for an application's tests of its jobs (feature `testing`): what was enqueued, and
//! assertions about it that say what was there instead when they fail.
//!
//! With [`Worker::drain`](crate::Worker::drain), which runs every due job through the worker's
//! handlers in the test's task, and the in-memory backend's manual clock (which makes delays,
//! retries and schedule slots due when the test moves it), a test of a job needs no database
//! server and no sleeping:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use dbqueue_core::{JobArgs, NewJob, Queue, Worker, RunOutcome};
//! # use dbqueue_core::testing::{assert_enqueued, refute_enqueued, Enqueued};
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Welcome { user: u64 }
//! impl JobArgs for Welcome { const KIND: &'static str = "welcome"; }
//!
//! # async fn example(queue: Arc<dyn Queue>) -> dbqueue_core::Result<()> {
//! // The code under test pushes a job...
//! queue.push(NewJob::of(&Welcome { user: 7 })?).await?;
//! // ...and the test finds it by kind and args.
//! let job = assert_enqueued(&*queue, &Enqueued::of::<Welcome>().args(|w: &Welcome| w.user == 7)).await;
//! assert_eq!(job.attempts, 0);
//! // Then runs it through the real handler.
//! let worker = Worker::builder(queue.clone(), "default")
//!     .job(|w: Welcome, _ctx| async move { assert_eq!(w.user, 7); Ok(()) })
//!     .build()?;
//! let drained = worker.drain().await?;
//! assert_eq!(drained.count(RunOutcome::Completed), 1);
//! refute_enqueued(&*queue, &Enqueued::of::<Welcome>()).await;
//! # Ok(())
//! # }
//! ```
//!
//! The helpers read jobs that are committed: on a real backend, give each test its own
//! database, schema or file (a job pushed inside a transaction of the test's that is not
//! committed is not seen).

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Result;
use crate::job::{Job, JobArgs, JobState, DEFAULT_QUEUE};
use crate::queue::{ListRequest, Queue};

type ArgsTest = Arc<dyn Fn(&Job) -> bool + Send + Sync>;

/// Which enqueued jobs to look for: those of a queue, optionally of one kind, optionally whose
/// args pass a test. Enqueued means pending: due now or scheduled for later.
#[derive(Clone)]
pub struct Enqueued {
    queue: String,
    kind: Option<String>,
    args: Option<(String, ArgsTest)>,
}

impl fmt::Debug for Enqueued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Enqueued")
            .field("queue", &self.queue)
            .field("kind", &self.kind)
            .field("args", &self.args.as_ref().map(|(what, _)| what))
            .finish()
    }
}

impl Enqueued {
    /// The jobs of `queue`.
    pub fn queue(queue: impl Into<String>) -> Self {
        Enqueued {
            queue: queue.into(),
            kind: None,
            args: None,
        }
    }

    /// The jobs of kind `T`, in the queue its options name (the default queue when they name
    /// none).
    pub fn of<T: JobArgs>() -> Self {
        let queue = T::options()
            .queue
            .unwrap_or_else(|| DEFAULT_QUEUE.to_owned());
        Enqueued::queue(queue).kind(T::KIND)
    }

    /// Only jobs of kind `kind`.
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// Only jobs whose args deserialize into `T` and pass `test`.
    pub fn args<T: DeserializeOwned>(
        mut self,
        test: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Self {
        let what = format!("args of type {} passing a test", std::any::type_name::<T>());
        let test: ArgsTest = Arc::new(move |job: &Job| job.payload::<T>().is_ok_and(|a| test(&a)));
        self.args = Some((what, test));
        self
    }

    /// Only jobs whose args are `args` (as JSON values: the order of an object's fields does
    /// not matter).
    ///
    /// # Panics
    /// When `args` cannot be serialized.
    pub fn args_eq(mut self, args: &impl Serialize) -> Self {
        let want = serde_json::to_value(args).expect("args to compare with serialize to JSON");
        let what = format!("args equal to {want}");
        let test: ArgsTest = Arc::new(move |job: &Job| {
            job.payload::<serde_json::Value>()
                .is_ok_and(|got| got == want)
        });
        self.args = Some((what, test));
        self
    }

    fn matches(&self, job: &Job) -> bool {
        self.args.as_ref().is_none_or(|(_, test)| test(job))
    }
}

impl fmt::Display for Enqueued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a job in queue {:?}", self.queue)?;
        if let Some(kind) = &self.kind {
            write!(f, " of kind {kind:?}")?;
        }
        if let Some((what, _)) = &self.args {
            write!(f, " with {what}")?;
        }
        Ok(())
    }
}

/// Every enqueued (pending) job that `which` matches, oldest first (every pending job of its
/// queue and kind is read, a page at a time).
///
/// # Errors
/// As [`Queue::list`].
pub async fn enqueued(queue: &dyn Queue, which: &Enqueued) -> Result<Vec<Job>> {
    Ok(pending(queue, which)
        .await?
        .into_iter()
        .filter(|j| which.matches(j))
        .collect())
}

/// The pending jobs of `which`'s queue and kind, whatever their args, oldest first.
async fn pending(queue: &dyn Queue, which: &Enqueued) -> Result<Vec<Job>> {
    let mut jobs = Vec::new();
    let mut before = None;
    loop {
        let page = queue
            .list(ListRequest {
                queue: Some(which.queue.clone()),
                state: Some(JobState::Pending),
                kind: which.kind.clone(),
                limit: 1_000,
                before,
            })
            .await?;
        let full = page.len() == 1_000;
        before = page.last().map(|j| j.id);
        jobs.extend(page);
        if !full {
            break;
        }
    }
    jobs.reverse();
    Ok(jobs)
}

/// The oldest enqueued job that `which` matches.
///
/// # Panics
/// When there is none (the message lists the queue's pending jobs of the kind, with their
/// args), or when the jobs cannot be read.
pub async fn assert_enqueued(queue: &dyn Queue, which: &Enqueued) -> Job {
    let all = pending(queue, which)
        .await
        .unwrap_or_else(|e| panic!("could not list the enqueued jobs: {e}"));
    match all.iter().find(|j| which.matches(j)) {
        Some(job) => job.clone(),
        None => panic!(
            "expected {which} to be enqueued; {}",
            describe(&all, "enqueued there")
        ),
    }
}

/// Asserts that no enqueued job matches `which`.
///
/// # Panics
/// When one does (the message lists those that do), or when the jobs cannot be read.
pub async fn refute_enqueued(queue: &dyn Queue, which: &Enqueued) {
    let found = enqueued(queue, which)
        .await
        .unwrap_or_else(|e| panic!("could not list the enqueued jobs: {e}"));
    if !found.is_empty() {
        panic!(
            "expected no {} to be enqueued; {}",
            which.to_string().trim_start_matches("a "),
            describe(&found, "found")
        );
    }
}

fn describe(jobs: &[Job], what: &str) -> String {
    if jobs.is_empty() {
        return format!("none is {what}");
    }
    let shown: Vec<String> = jobs
        .iter()
        .take(20)
        .map(|j| {
            format!(
                "  {} kind {:?} args {}",
                j.id,
                j.kind.as_deref().unwrap_or(""),
                j.payload.get()
            )
        })
        .collect();
    let more = jobs.len().saturating_sub(shown.len());
    let tail = if more > 0 {
        format!("\n  ... and {more} more")
    } else {
        String::new()
    };
    format!("{} {what}:\n{}{tail}", jobs.len(), shown.join("\n"))
}
