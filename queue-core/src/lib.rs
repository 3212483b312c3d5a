#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
// docs.rs (nightly, `--cfg docsrs`) marks each item that a feature gates with that feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, unreachable_pub)]

pub mod engine;
pub mod error;
mod ids;
pub mod job;
pub mod metrics;
#[cfg(feature = "opentelemetry")]
pub mod otel;
pub mod periodic;
pub mod profile;
pub mod queue;
pub mod retention;
pub mod retry;
#[cfg(feature = "testing")]
pub mod testing;
pub mod unique;
pub mod validate;
pub mod wait;
pub mod wake;
pub mod worker;
pub mod workflow;

pub use engine::{Backend, CommonOptions, Engine};
pub use error::{BoxError, Error, Result};
pub use job::{
    AttemptError, FailOutcome, Failure, FailureKind, Job, JobArgs, JobId, JobState, KindOptions,
    Lease, Leased, NewJob, Reschedule, Schedule, Snooze, SnoozeOutcome, DEFAULT_QUEUE, ERRORS_KEPT,
};
pub use periodic::{
    ManualClock, Misfire, PeriodicJob, Registration, ScheduleInfo, Scheduler, SchedulerHandle,
};
pub use profile::{EngineProfile, Profile, ServerKind};
pub use queue::{
    BulkAction, BulkOutcome, Capabilities, CheckedPop, ClaimStrategy, Dialect, HotKey, JobFilter,
    ListRequest, PopRequest, PruneRequest, Queue, QueueControl, QueueStats, RateLimit, Wakeups,
    HOT_KEYS, MAX_CONCURRENCY_LIMIT, MAX_RATE_PERIOD, MIN_RATE_PERIOD,
};
pub use retention::{Retention, RetentionReport, RETENTION_ROUND};
pub use retry::{FailDecision, RetryPolicy};
pub use unique::{PushOutcome, Unique, DEFAULT_UNIQUE_STATES};
pub use validate::Limits;
pub use wake::WakeHub;
pub use worker::{
    CancelReason, Counters, Drained, DrainedJob, EventItem, Events, Handler, JobContext, JobError,
    JobEvent, Middleware, Next, RunOutcome, ShutdownReport, Transition, Worker, WorkerBuilder,
    WorkerHandle,
};
pub use workflow::{
    BatchCounts, Dep, DepPolicy, Dependency, PushedWorkflow, Workflow, WorkflowId, WorkflowInfo,
    WorkflowJob, WorkflowListRequest, WorkflowSummary,
};

// For the macros that write trait impls for the dialects (`sqlx_lifecycle!`).
#[doc(hidden)]
pub use async_trait::async_trait as __async_trait;

/// The target of every log line the core writes, for filtering.
pub const LOG_TARGET: &str = "queue";
