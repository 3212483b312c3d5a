//! The one error type every backend returns.

use crate::ids::{JobId, JobState, WorkflowId};

/// A boxed error from a database driver or another lower layer, kept as the `source`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong when using a queue.
///
/// Backends map their driver errors into these kinds in one function each, so callers can
/// react to `Unavailable` (retry later) differently from `LeaseLost` (stop working on the job).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument broke a validation rule; nothing was stored.
    #[error("invalid {field}: {rule}")]
    InvalidInput {
        /// The field that was rejected, e.g. `queue` or `jobs[3].max_attempts`.
        field: String,
        /// The rule it broke, in words.
        rule: String,
    },

    /// The lease presented is no longer the job's current lease (it expired and was rescued,
    /// another worker holds the job now, or the job was released); nothing was changed.
    #[error("lease lost on job {job}: the job is no longer held with this lease")]
    LeaseLost {
        /// The job whose lease was presented.
        job: JobId,
    },

    /// The job was cancelled while this lease held it; the holder's transition changed nothing.
    #[error("job {job} was cancelled while it was running")]
    Cancelled {
        /// The cancelled job.
        job: JobId,
    },

    /// No job has this id.
    #[error("job {job} not found")]
    NotFound {
        /// The id that was looked up.
        job: JobId,
    },

    /// The operation does not apply to a job in this state (e.g. retrying a pending job).
    #[error("cannot {operation} job {job}: it is {state}")]
    InvalidState {
        /// The job.
        job: JobId,
        /// Its state when the operation was attempted.
        state: JobState,
        /// What was attempted.
        operation: &'static str,
    },

    /// A live (non-terminal) job in the same queue already has this dedup key; nothing was stored.
    #[error("a live job in queue {queue:?} already has dedup key {dedup_key:?}")]
    Duplicate {
        /// The queue.
        queue: String,
        /// The dedup key that collided.
        dedup_key: String,
    },

    /// A job with the same unique key holds its place (a [`crate::Unique`] rule), so this job
    /// cannot return to a state its rule counts (a retry of a dead or cancelled job); nothing
    /// was changed.
    #[error("job {job} cannot come back: job {holder} holds its unique key")]
    UniqueTaken {
        /// The job that could not come back.
        job: JobId,
        /// The job holding the key.
        holder: JobId,
    },

    /// The database could not be reached (connection refused, timed out, pool closed).
    #[error("database unavailable: {source}")]
    Unavailable {
        /// What the driver reported.
        #[source]
        source: BoxError,
    },

    /// A deadlock, lock wait timeout or serialization failure (PostgreSQL `40001`, `40P01`,
    /// `55P03`; MySQL 1213, 1205; SQL Server 1205, 1222) rolled the work back. What the queue
    /// runs on its own was already tried again (`lock_retries`, with jittered backoff) before
    /// this surfaced. Inside the caller's own transaction (`push_in_tx`, `complete_in_tx`)
    /// nothing is retried by the queue, since the transaction is the caller's: it is aborted;
    /// roll it back and run the whole transaction again.
    #[error("conflict with a concurrent transaction: {source}")]
    Conflict {
        /// What the driver reported.
        #[source]
        source: BoxError,
    },

    /// A workflow with this id exists already; nothing was stored.
    #[error("workflow {workflow} exists already")]
    WorkflowExists {
        /// The id.
        workflow: WorkflowId,
    },

    /// No workflow has this id.
    #[error("workflow {workflow} not found")]
    UnknownWorkflow {
        /// The id that was looked up.
        workflow: WorkflowId,
    },

    /// The workflow is not an open batch (it was sealed, or never was one): it takes no
    /// more jobs and cannot be sealed again.
    #[error("workflow {workflow} is not an open batch")]
    WorkflowSealed {
        /// The workflow.
        workflow: WorkflowId,
    },

    /// A step of a workflow cannot be retried: a job it needs to have completed (policy
    /// [`DepPolicy::Completed`](crate::DepPolicy::Completed)) is dead or cancelled, or was
    /// deleted, so the step would wait for it in vain. Retry that dependency instead (its
    /// retry brings this step back too); nothing was changed.
    #[error("job {job} cannot be retried: it needs job {dependency}, which {}", dependency_words(*.state))]
    DependencyFailed {
        /// The step that was to be retried.
        job: JobId,
        /// The dependency that failed.
        dependency: JobId,
        /// Its state (`None`: it was deleted).
        state: Option<JobState>,
    },

    /// No schedule has this name.
    #[error("no schedule named {name:?}")]
    UnknownSchedule {
        /// The name that was looked up.
        name: String,
    },

    /// A wait for a job ([`crate::Queue::wait`]) ended before the job finished; nothing was
    /// changed.
    #[error("job {job} did not finish within {waited:?}")]
    WaitTimedOut {
        /// The job waited for.
        job: JobId,
        /// How long the wait lasted.
        waited: std::time::Duration,
    },

    /// The backend cannot do this (e.g. LISTEN/NOTIFY on SQLite).
    #[error("not supported by this backend: {0}")]
    Unsupported(&'static str),

    /// A payload could not be serialized or deserialized.
    #[error("payload (de)serialization failed: {0}")]
    Payload(#[from] serde_json::Error),

    /// The database rejected a statement for a reason that has no kind of its own.
    #[error("database error: {source}")]
    Database {
        /// What the driver reported.
        #[source]
        source: BoxError,
    },
}

impl Error {
    /// Builds an [`Error::InvalidInput`] for `field`, which broke `rule`.
    pub fn invalid(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Error::InvalidInput {
            field: field.into(),
            rule: rule.into(),
        }
    }

    /// Wraps a driver error as [`Error::Database`].
    pub fn database(source: impl Into<BoxError>) -> Self {
        Error::Database {
            source: source.into(),
        }
    }

    /// Wraps a driver error as [`Error::Conflict`].
    pub fn conflict(source: impl Into<BoxError>) -> Self {
        Error::Conflict {
            source: source.into(),
        }
    }

    /// Whether running the whole operation again may succeed: the database was unreachable
    /// ([`Error::Unavailable`]) or a concurrent transaction won ([`Error::Conflict`]; inside
    /// your own transaction, roll it back first).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Unavailable { .. } | Error::Conflict { .. })
    }

    /// Wraps a driver error as [`Error::Unavailable`].
    pub fn unavailable(source: impl Into<BoxError>) -> Self {
        Error::Unavailable {
            source: source.into(),
        }
    }

    /// Whether retrying the same call later may succeed (the database was unreachable).
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Unavailable { .. })
    }

    /// Prefixes the field of an [`Error::InvalidInput`], e.g. `max_attempts` -> `jobs[3].max_attempts`.
    pub(crate) fn in_field(self, prefix: &str) -> Self {
        match self {
            Error::InvalidInput { field, rule } => Error::InvalidInput {
                field: format!("{prefix}.{field}"),
                rule,
            },
            other => other,
        }
    }
}

/// A first connection to a database server that failed, naming the server's address (never its
/// credentials) and the driver's reason.
#[derive(Debug, thiserror::Error)]
#[error("cannot connect to {what} at {address}: {source}")]
pub struct ConnectError {
    /// The kind of server, e.g. `PostgreSQL`.
    pub what: &'static str,
    /// `host:port` (or the socket path) that was tried.
    pub address: String,
    /// Why it failed.
    #[source]
    pub source: BoxError,
}

impl ConnectError {
    /// A failed connection to the `what` server at `address`.
    pub fn new(what: &'static str, address: String, source: impl Into<BoxError>) -> Self {
        ConnectError {
            what,
            address,
            source: source.into(),
        }
    }
}

/// Result with the queue's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How [`Error::DependencyFailed`] names its dependency's state.
fn dependency_words(state: Option<JobState>) -> String {
    match state {
        None => "was deleted".to_owned(),
        Some(s) => format!("is {s} (retry it first)"),
    }
}
