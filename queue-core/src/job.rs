//! The job model: ids, states, what a producer pushes and what a worker pops.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::validate;

/// A job's id: a UUID v7 made by the client at push time, so ids sort by creation time and a
/// batch push needs no round trip to learn them.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct JobId(pub Uuid);

impl JobId {
    /// A new time-ordered id.
    pub fn new() -> Self {
        JobId(Uuid::now_v7())
    }

    /// The underlying UUID.
    pub fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl Default for JobId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for JobId {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Uuid::parse_str(s).map(JobId).map_err(|_| {
            Error::invalid(
                "id",
                "must be a UUID such as 0190f0e4-1c2b-7d3e-8f00-123456789abc",
            )
        })
    }
}

impl From<Uuid> for JobId {
    fn from(u: Uuid) -> Self {
        JobId(u)
    }
}

/// Where a job is in its life. See the state diagram in the crate docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Waiting to be claimed once `run_at` has passed.
    Pending,
    /// Claimed by a worker holding a live lease.
    Running,
    /// Acked: finished successfully.
    Completed,
    /// Failed permanently or ran out of attempts; `retry` brings it back.
    Dead,
    /// Cancelled by an operator or the application.
    Cancelled,
}

impl JobState {
    /// Every state, in lifecycle order.
    pub const ALL: [JobState; 5] = [
        JobState::Pending,
        JobState::Running,
        JobState::Completed,
        JobState::Dead,
        JobState::Cancelled,
    ];

    /// The states a job never leaves by itself (only `retry` or `prune` touch them).
    pub const FINISHED: [JobState; 3] = [JobState::Completed, JobState::Dead, JobState::Cancelled];

    /// The name stored in the database.
    pub fn as_str(&self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Completed => "completed",
            JobState::Dead => "dead",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Whether the job is finished (completed, dead or cancelled).
    pub fn is_finished(&self) -> bool {
        Self::FINISHED.contains(self)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JobState {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "pending" => JobState::Pending,
            "running" => JobState::Running,
            "completed" => JobState::Completed,
            "dead" => JobState::Dead,
            "cancelled" => JobState::Cancelled,
            _ => {
                return Err(Error::invalid(
                    "state",
                    "must be one of pending, running, completed, dead, cancelled",
                ))
            }
        })
    }
}

/// When a new job becomes claimable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// As soon as it is pushed.
    Now,
    /// This long after the database receives the push.
    After(Duration),
    /// At this instant (a past instant means now).
    At(DateTime<Utc>),
}

/// A job to push. Build it with [`NewJob::new`] and the builder methods; everything is
/// validated again by the backend before anything is stored.
#[derive(Clone, Debug)]
pub struct NewJob {
    pub(crate) id: JobId,
    pub(crate) queue: String,
    pub(crate) payload: Box<RawValue>,
    pub(crate) priority: i32,
    pub(crate) max_attempts: u32,
    pub(crate) schedule: Schedule,
    pub(crate) dedup_key: Option<String>,
}

impl NewJob {
    /// Default number of attempts before a failing job goes dead.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 25;

    /// A job for `queue` carrying `payload` serialized as JSON.
    ///
    /// # Errors
    /// [`Error::Payload`] when the payload cannot be serialized.
    pub fn new(queue: impl Into<String>, payload: &impl Serialize) -> Result<Self> {
        let raw = serde_json::value::to_raw_value(payload)?;
        Ok(Self::from_raw(queue, raw))
    }

    /// A job for `queue` whose payload is already JSON text.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `payload` when the text is not JSON.
    pub fn from_json(queue: impl Into<String>, json: &str) -> Result<Self> {
        let raw = RawValue::from_string(json.to_owned())
            .map_err(|e| Error::invalid("payload", format!("must be valid JSON ({e})")))?;
        Ok(Self::from_raw(queue, raw))
    }

    fn from_raw(queue: impl Into<String>, payload: Box<RawValue>) -> Self {
        NewJob {
            id: JobId::new(),
            queue: queue.into(),
            payload,
            priority: 0,
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            schedule: Schedule::Now,
            dedup_key: None,
        }
    }

    /// Higher runs first; the default is 0.
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Not claimable until `delay` after the push.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.schedule = Schedule::After(delay);
        self
    }

    /// Not claimable before `at`.
    pub fn run_at(mut self, at: DateTime<Utc>) -> Self {
        self.schedule = Schedule::At(at);
        self
    }

    /// How many times the job may be claimed before a failure makes it dead (at least 1).
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// At most one live (pending or running) job per queue has this key; a push of a second
    /// fails with [`Error::Duplicate`]. Once the job finishes the key is free again.
    pub fn dedup_key(mut self, key: impl Into<String>) -> Self {
        self.dedup_key = Some(key.into());
        self
    }

    /// Overrides the client-made id (rarely needed; ids must be unique).
    pub fn with_id(mut self, id: JobId) -> Self {
        self.id = id;
        self
    }

    /// The id the job will have.
    pub fn id(&self) -> JobId {
        self.id
    }
    /// The queue it goes to.
    pub fn queue(&self) -> &str {
        &self.queue
    }
    /// The payload as JSON text.
    pub fn payload_json(&self) -> &str {
        self.payload.get()
    }
    /// Its priority.
    pub fn priority_value(&self) -> i32 {
        self.priority
    }
    /// Its attempt budget.
    pub fn max_attempts_value(&self) -> u32 {
        self.max_attempts
    }
    /// When it becomes claimable.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }
    /// Its dedup key, if any.
    pub fn dedup_key_value(&self) -> Option<&str> {
        self.dedup_key.as_deref()
    }

    /// The delay from the database's "now" at which the job becomes due, given the client's
    /// `now`. Backends add this to their own clock, so client clock skew matters only for
    /// [`Schedule::At`].
    pub fn delay_from(&self, now: DateTime<Utc>) -> Duration {
        match self.schedule {
            Schedule::Now => Duration::ZERO,
            Schedule::After(d) => d,
            Schedule::At(at) => (at - now).to_std().unwrap_or(Duration::ZERO),
        }
    }

    /// Checks every rule for a job against `limits`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the first field that breaks a rule.
    pub fn validate(&self, limits: &validate::Limits) -> Result<()> {
        validate::queue_name(&self.queue)?;
        validate::payload(self.payload.get(), limits)?;
        validate::max_attempts(self.max_attempts)?;
        match self.schedule {
            Schedule::Now => {}
            Schedule::After(d) => validate::delay(d)?,
            Schedule::At(at) => validate::run_at(at, Utc::now())?,
        }
        if let Some(key) = &self.dedup_key {
            validate::dedup_key(key)?;
        }
        Ok(())
    }
}

/// A job as stored.
#[derive(Clone, Debug)]
pub struct Job {
    /// Its id.
    pub id: JobId,
    /// Its queue.
    pub queue: String,
    /// Its payload, JSON text exactly as the database returned it.
    pub payload: Box<RawValue>,
    /// Higher runs first.
    pub priority: i32,
    /// Where it is in its life.
    pub state: JobState,
    /// How many times it has been claimed (a released claim is not counted).
    pub attempts: u32,
    /// Its attempt budget.
    pub max_attempts: u32,
    /// Not claimable before this.
    pub run_at: DateTime<Utc>,
    /// While running: when the current lease expires.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// While running: the id of the worker holding it.
    pub worker: Option<String>,
    /// The last failure's message, bounded in length.
    pub last_error: Option<String>,
    /// Its dedup key, if any.
    pub dedup_key: Option<String>,
    /// When it was pushed (database clock).
    pub created_at: DateTime<Utc>,
    /// When it last changed (database clock).
    pub updated_at: DateTime<Utc>,
    /// When it reached a finished state.
    pub finished_at: Option<DateTime<Utc>>,
}

impl Job {
    /// Deserializes the payload.
    ///
    /// # Errors
    /// [`Error::Payload`] when the JSON does not fit `T`.
    pub fn payload<T: DeserializeOwned>(&self) -> Result<T> {
        Ok(serde_json::from_str(self.payload.get())?)
    }

    /// The payload as a JSON value.
    pub fn payload_value(&self) -> serde_json::Value {
        serde_json::from_str(self.payload.get()).unwrap_or(serde_json::Value::Null)
    }
}

/// Proof of a claim: the holder presents it to ack, fail, extend or release. Every transition
/// is fenced by `token`, so a holder whose lease was lost changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The leased job.
    pub job_id: JobId,
    /// The job's queue.
    pub queue: String,
    /// The fencing token, new at every claim.
    pub token: Uuid,
    /// When the lease runs out unless extended.
    pub expires_at: DateTime<Utc>,
    /// Which attempt this is (1 for the first claim).
    pub attempt: u32,
    /// The job's attempt budget.
    pub max_attempts: u32,
}

/// A claimed job and its lease.
#[derive(Clone, Debug)]
pub struct Leased {
    /// The job, as claimed (state running).
    pub job: Job,
    /// The lease to present for every later transition.
    pub lease: Lease,
}

impl Leased {
    /// A job row as a claim stored it, with the claim's lease `token`.
    ///
    /// # Errors
    /// [`Error::Database`] when the row carries no lease expiry (a claim always sets one).
    pub fn from_claimed(job: Job, token: uuid::Uuid) -> Result<Self> {
        let Some(expires_at) = job.lease_expires_at else {
            return Err(Error::database(format!(
                "claimed job {} has no lease",
                job.id
            )));
        };
        let lease = Lease {
            job_id: job.id,
            queue: job.queue.clone(),
            token,
            expires_at,
            attempt: job.attempts,
            max_attempts: job.max_attempts,
        };
        Ok(Leased { job, lease })
    }
}

/// Why a job failed, as the worker reports it.
#[derive(Clone, Debug)]
pub struct Failure {
    /// What went wrong; stored in `last_error`, truncated to [`validate::MAX_ERROR_CHARS`].
    pub message: String,
    /// Whether another attempt may help.
    pub kind: FailureKind,
}

/// Whether a failure may be retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// Retry after the retry policy's backoff (if attempts remain).
    Retryable,
    /// Retry after exactly this delay (if attempts remain).
    RetryAfter(Duration),
    /// Never retry: the job goes dead now.
    Permanent,
}

impl Failure {
    /// A failure that may be retried after the policy's backoff.
    pub fn retryable(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            kind: FailureKind::Retryable,
        }
    }

    /// A failure that may be retried after `delay`.
    pub fn retry_after(message: impl Into<String>, delay: Duration) -> Self {
        Failure {
            message: message.into(),
            kind: FailureKind::RetryAfter(delay),
        }
    }

    /// A failure no retry can fix.
    pub fn permanent(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            kind: FailureKind::Permanent,
        }
    }
}

/// What `fail` did with the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOutcome {
    /// Back to pending, claimable again this long after the failure was recorded.
    Retrying {
        /// The backoff that was applied.
        after: Duration,
    },
    /// Dead: permanent failure or no attempts left.
    Dead,
}
