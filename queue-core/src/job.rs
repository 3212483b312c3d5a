//! The job model: ids, states, what a producer pushes and what a worker pops.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::error::{Error, Result};
pub use crate::ids::{JobId, JobState};
use crate::validate;

/// How many times a job may snooze unless its kind or the worker says otherwise.
pub const DEFAULT_MAX_SNOOZES: u32 = 1_000;

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

impl FromStr for JobState {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "waiting" => JobState::Waiting,
            "pending" => JobState::Pending,
            "running" => JobState::Running,
            "completed" => JobState::Completed,
            "dead" => JobState::Dead,
            "cancelled" => JobState::Cancelled,
            _ => {
                return Err(Error::invalid(
                    "state",
                    "must be one of waiting, pending, running, completed, dead, cancelled",
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
    pub(crate) kind: Option<String>,
    pub(crate) meta: Option<Box<RawValue>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) unique: Option<crate::unique::Unique>,
    pub(crate) concurrency_key: Option<String>,
    /// Set by the engine for a step of a workflow: never by the caller.
    pub(crate) workflow: Option<WorkflowSlot>,
}

/// Where a job pushed as a step of a workflow goes: set by the engine, read by drivers through
/// [`NewJob::workflow_slot`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkflowSlot {
    /// The workflow.
    pub workflow: crate::workflow::WorkflowId,
    /// Stored as waiting (it has dependencies) rather than pending.
    pub waiting: bool,
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
            kind: None,
            meta: None,
            timeout: None,
            unique: None,
            concurrency_key: None,
            workflow: None,
        }
    }

    /// A job of the typed kind `A`, carrying `args` as its payload: its kind is
    /// [`JobArgs::KIND`], and its queue, priority and attempt budget are the kind's
    /// [`JobArgs::options`] (the queue [`DEFAULT_QUEUE`] when the kind names none). Each can be
    /// changed afterwards with the builder methods. The kind's timeout is not stored with the
    /// job: the worker applies the kind's timeout as it is when the job runs, unless the job
    /// was given one of its own ([`NewJob::timeout`]).
    ///
    /// # Errors
    /// [`Error::Payload`] when `args` cannot be serialized; [`Error::InvalidInput`] naming
    /// `concurrency_key` when the kind derives its key from a field the args lack
    /// ([`KindOptions::concurrency_key_from`]).
    pub fn of<A: JobArgs>(args: &A) -> Result<Self> {
        let options = A::options();
        let queue = options.queue.unwrap_or_else(|| DEFAULT_QUEUE.to_owned());
        let mut job = Self::new(queue, args)?.kind(A::KIND);
        if let Some(p) = options.priority {
            job.priority = p;
        }
        if let Some(n) = options.max_attempts {
            job.max_attempts = n;
        }
        job.unique = options.unique;
        if let Some(fields) = &options.concurrency_key_fields {
            job.concurrency_key = Some(derived_key(A::KIND, job.payload.get(), fields)?);
        }
        Ok(job)
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

    /// The job's kind: which handler of a worker runs it (see [`crate::worker::WorkerBuilder::job`]).
    /// 1..=128 characters of `[A-Za-z0-9_.:-]`, like a queue name. [`NewJob::of`] sets it from
    /// the args type.
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// Metadata stored with the job: a JSON object (at most the queue's `max_meta_bytes`), which
    /// its handler can read and merge more into while it holds the lease
    /// ([`crate::worker::JobContext::merge_meta`]), and which `get` returns.
    ///
    /// # Errors
    /// [`Error::Payload`] when `meta` cannot be serialized; [`Error::InvalidInput`] naming
    /// `meta` when it is not a JSON object.
    pub fn meta(mut self, meta: &impl Serialize) -> Result<Self> {
        let raw = serde_json::value::to_raw_value(meta)?;
        validate::meta_object(raw.get())?;
        self.meta = Some(raw);
        Ok(self)
    }

    /// Makes the job unique by `rule`: a push that meets a job with the same key holding its
    /// place stores nothing and reports that job ([`crate::PushOutcome::Existing`]). Replaces
    /// the kind's rule, if it has one.
    pub fn unique(mut self, rule: crate::unique::Unique) -> Self {
        self.unique = Some(rule);
        self
    }

    /// The longest one attempt of this job may run: past it, a worker stops the handler and the
    /// attempt fails. Overrides the kind's timeout and the worker's.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The job's concurrency key: in a queue with a key limit
    /// ([`crate::Queue::set_key_limit`]) at most that many jobs with the same key hold a live
    /// lease at once, and in a queue with fair shares ([`crate::Queue::set_fair_shares`]) claims
    /// take turns across keys. Typically a customer or tenant id. 1..=200 characters, no NUL;
    /// compared byte for byte (`Acme` and `acme` are two keys). A job without a key is never
    /// held back by a key limit.
    pub fn concurrency_key(mut self, key: impl Into<String>) -> Self {
        self.concurrency_key = Some(key.into());
        self
    }

    /// Sends the job to `queue` instead (e.g. a typed job away from its kind's queue).
    pub fn with_queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = queue.into();
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
    /// Its concurrency key, if any.
    pub fn concurrency_key_value(&self) -> Option<&str> {
        self.concurrency_key.as_deref()
    }
    /// Its kind, if any.
    pub fn kind_value(&self) -> Option<&str> {
        self.kind.as_deref()
    }
    /// Its metadata as JSON text, if any.
    pub fn meta_json(&self) -> Option<&str> {
        self.meta.as_deref().map(RawValue::get)
    }
    /// Its timeout, if any.
    pub fn timeout_value(&self) -> Option<Duration> {
        self.timeout
    }

    /// Where the job goes as a step of a workflow (`None` for a job pushed alone).
    pub fn workflow_slot(&self) -> Option<&WorkflowSlot> {
        self.workflow.as_ref()
    }

    /// The state the job is stored in: waiting for a workflow step with dependencies, else
    /// pending.
    pub fn initial_state(&self) -> JobState {
        match &self.workflow {
            Some(slot) if slot.waiting => JobState::Waiting,
            _ => JobState::Pending,
        }
    }

    /// The workflow the job is a step of (`None` for a job pushed alone).
    pub fn workflow_id(&self) -> Option<crate::workflow::WorkflowId> {
        self.workflow.as_ref().map(|w| w.workflow)
    }

    /// Its uniqueness rule, if any.
    pub fn unique_value(&self) -> Option<&crate::unique::Unique> {
        self.unique.as_ref()
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

    /// Checks every rule for a job against `limits` (a `run_at` against the system clock).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the first field that breaks a rule.
    pub fn validate(&self, limits: &validate::Limits) -> Result<()> {
        self.validate_at(limits, Utc::now())
    }

    /// [`NewJob::validate`] with `now` as the time a `run_at` is checked against (the engine
    /// passes its driver's host clock, a manual one in tests).
    ///
    /// # Errors
    /// As [`NewJob::validate`].
    pub fn validate_at(&self, limits: &validate::Limits, now: DateTime<Utc>) -> Result<()> {
        validate::queue_name(&self.queue)?;
        validate::payload(self.payload.get(), limits)?;
        validate::max_attempts(self.max_attempts)?;
        match self.schedule {
            Schedule::Now => {}
            Schedule::After(d) => validate::delay(d)?,
            Schedule::At(at) => validate::run_at(at, now)?,
        }
        if let Some(key) = &self.dedup_key {
            validate::dedup_key(key)?;
        }
        if let Some(kind) = &self.kind {
            validate::kind(kind)?;
        }
        if let Some(key) = &self.concurrency_key {
            validate::concurrency_key(key)?;
        }
        if let Some(meta) = &self.meta {
            validate::meta(meta.get(), limits)?;
        }
        if let Some(timeout) = self.timeout {
            validate::timeout("timeout", timeout)?;
        }
        if let Some(rule) = &self.unique {
            rule.validate()?;
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
    /// Its kind, if it has one: which handler runs it.
    pub kind: Option<String>,
    /// Its metadata (a JSON object), if any was set at push or merged in by a handler.
    pub meta: Option<Box<RawValue>>,
    /// The longest one attempt may run, when the job was pushed with one.
    pub timeout: Option<Duration>,
    /// How many times a handler snoozed it (a snooze does not count as an attempt).
    pub snoozes: u32,
    /// The failures of its attempts, oldest first: at most the [`ERRORS_KEPT`] most recent.
    /// Read by `get` only (empty in what `list` and claims return, which carry `last_error`).
    pub errors: Vec<AttemptError>,
    /// What its handler recorded when it completed, if anything. Read by `get` only (`None` in
    /// what `list` and claims return).
    pub output: Option<Box<RawValue>>,
    /// The workflow it is a step of, if any.
    pub workflow: Option<crate::workflow::WorkflowId>,
    /// Its step name in that workflow. Read by `get` and `workflow` only.
    pub step: Option<String>,
    /// Cancelled because this dependency ended dead or cancelled (a workflow's failure
    /// policy); cleared when that dependency is retried.
    pub blocked_by: Option<JobId>,
    /// What it depends on, each with its state and output. Read by `get` only.
    pub depends_on: Vec<crate::workflow::Dependency>,
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

    /// The metadata as a JSON value (an empty object when there is none).
    pub fn meta_value(&self) -> serde_json::Value {
        self.meta
            .as_deref()
            .and_then(|m| serde_json::from_str(m.get()).ok())
            .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new()))
    }

    /// Deserializes the recorded output; `None` when the job recorded none.
    ///
    /// # Errors
    /// [`Error::Payload`] when the JSON does not fit `T`.
    pub fn output<T: DeserializeOwned>(&self) -> Result<Option<T>> {
        self.output
            .as_deref()
            .map(|o| serde_json::from_str(o.get()))
            .transpose()
            .map_err(Error::from)
    }
}

/// How many failures a job's history keeps: the most recent ones, oldest first.
pub const ERRORS_KEPT: u32 = 20;

/// The queue a typed job goes to when its kind names none.
pub const DEFAULT_QUEUE: &str = "default";

/// One failed attempt of a job, as kept in its history ([`Job::errors`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AttemptError {
    /// Which attempt failed (1 for the first).
    pub attempt: u32,
    /// When the failure was recorded (database clock).
    pub at: DateTime<Utc>,
    /// What went wrong (bounded like `last_error`).
    pub error: String,
    /// The worker that held the job, when it was known.
    pub worker: Option<String>,
}

/// Decodes a stored error history (a JSON array of `{attempt, at, error, worker}` objects) as
/// each dialect writes it. Used by every driver, so the history reads the same everywhere.
///
/// # Errors
/// A message naming what does not fit.
pub fn parse_errors(json: &str) -> std::result::Result<Vec<AttemptError>, String> {
    #[derive(serde::Deserialize)]
    struct Stored {
        attempt: i64,
        at: String,
        error: Option<String>,
        worker: Option<String>,
    }
    let stored: Vec<Stored> =
        serde_json::from_str(json).map_err(|e| format!("stored errors are not a list: {e}"))?;
    stored
        .into_iter()
        .map(|s| {
            Ok(AttemptError {
                attempt: u32::try_from(s.attempt)
                    .map_err(|_| format!("stored attempt out of range: {}", s.attempt))?,
                at: parse_stored_time(&s.at)?,
                error: s.error.unwrap_or_default(),
                worker: s.worker,
            })
        })
        .collect()
}

/// A time stored inside JSON by a dialect: RFC 3339 (`2026-01-02T03:04:05.123456Z`, any offset,
/// up to nine fractional digits), or the same with a space for the `T` and no zone (UTC).
fn parse_stored_time(text: &str) -> std::result::Result<DateTime<Utc>, String> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    let naive = text.trim_end_matches('Z').replacen(' ', "T", 1);
    chrono::NaiveDateTime::parse_from_str(&naive, "%Y-%m-%dT%H:%M:%S%.f")
        .map(|n| n.and_utc())
        .map_err(|e| format!("stored time {text:?} is not a time: {e}"))
}

/// Merges `patch` into `target` by the rules of JSON Merge Patch (RFC 7396): an object merges
/// key by key, recursively; a `null` removes the key; any other value replaces what was there.
pub fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    use serde_json::Value;
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let Value::Object(map) = target else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key);
        } else {
            merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// A typed job: the type of its arguments (its payload) names its kind, and may give the
/// defaults of its jobs. Push one with [`NewJob::of`]; register its handler with
/// [`crate::worker::WorkerBuilder::job`].
///
/// ```
/// use std::time::Duration;
/// use dbqueue::{JobArgs, KindOptions};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct SendEmail {
///     to: String,
/// }
///
/// impl JobArgs for SendEmail {
///     const KIND: &'static str = "send_email";
///
///     fn options() -> KindOptions {
///         KindOptions::new().queue("mailers").max_attempts(5).timeout(Duration::from_secs(30))
///     }
/// }
/// ```
pub trait JobArgs: Serialize + DeserializeOwned + Send + 'static {
    /// The kind's name, stored with each job: 1..=128 characters of `[A-Za-z0-9_.:-]`. Keep it
    /// stable: jobs already stored keep the name they were pushed with.
    const KIND: &'static str;

    /// The defaults of this kind's jobs (none by default).
    fn options() -> KindOptions {
        KindOptions::default()
    }
}

/// What a kind sets for its jobs unless a push or the worker says otherwise. At push
/// ([`NewJob::of`]): `queue`, `priority`, `max_attempts`, `unique`. In the worker that runs
/// them: `timeout` (for jobs pushed without one), `retry_policy` and `max_snoozes`.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct KindOptions {
    /// The queue of its jobs ([`DEFAULT_QUEUE`] when `None`).
    pub queue: Option<String>,
    /// Their priority (0 when `None`).
    pub priority: Option<i32>,
    /// Their attempt budget ([`NewJob::DEFAULT_MAX_ATTEMPTS`] when `None`).
    pub max_attempts: Option<u32>,
    /// The longest an attempt may run (the worker's `job_timeout` when `None`).
    pub timeout: Option<Duration>,
    /// The backoff between attempts (the queue's retry policy when `None`).
    pub retry_policy: Option<crate::retry::RetryPolicy>,
    /// Most snoozes per job ([`DEFAULT_MAX_SNOOZES`] when `None`).
    pub max_snoozes: Option<u32>,
    /// The uniqueness rule of its jobs (none when `None`).
    pub unique: Option<crate::unique::Unique>,
    /// The top-level fields of its args that make each job's concurrency key (none when
    /// `None`): see [`KindOptions::concurrency_key_from`].
    pub concurrency_key_fields: Option<Vec<String>>,
}

impl KindOptions {
    /// No defaults.
    pub fn new() -> Self {
        KindOptions::default()
    }

    /// The queue of the kind's jobs.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// The priority of the kind's jobs.
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// The attempt budget of the kind's jobs.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }

    /// The longest one attempt may run.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The backoff between attempts of the kind's jobs.
    pub fn retry_policy(mut self, policy: crate::retry::RetryPolicy) -> Self {
        self.retry_policy = Some(policy);
        self
    }

    /// Most snoozes per job of the kind.
    pub fn max_snoozes(mut self, n: u32) -> Self {
        self.max_snoozes = Some(n);
        self
    }

    /// Makes the kind's jobs unique by `rule` (see [`crate::Unique`]).
    pub fn unique(mut self, rule: crate::unique::Unique) -> Self {
        self.unique = Some(rule);
        self
    }

    /// Derives each job's concurrency key ([`NewJob::concurrency_key`]) from these top-level
    /// fields of its args: the kind's name, `:`, then the fields' values joined by `/` (a
    /// string as it is, anything else as JSON), e.g. `sync_account:42` for
    /// `concurrency_key_from(["account_id"])`. A push whose args lack a field is refused naming
    /// `concurrency_key`; a key set on the job afterwards replaces the derived one.
    pub fn concurrency_key_from<I, S>(mut self, fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.concurrency_key_fields = Some(fields.into_iter().map(Into::into).collect());
        self
    }

    /// Checks every option that is set.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the option (`queue`, `max_attempts`, `timeout`,
    /// `retry_policy.<field>`, `max_snoozes`, `concurrency_key_fields`).
    pub fn validate(&self) -> Result<()> {
        if let Some(q) = &self.queue {
            validate::queue_name(q)?;
        }
        if let Some(n) = self.max_attempts {
            validate::max_attempts(n)?;
        }
        if let Some(t) = self.timeout {
            validate::timeout("timeout", t)?;
        }
        if let Some(p) = &self.retry_policy {
            p.validate()?;
        }
        if let Some(n) = self.max_snoozes {
            validate::max_snoozes(n)?;
        }
        if let Some(rule) = &self.unique {
            rule.validate()?;
        }
        if let Some(fields) = &self.concurrency_key_fields {
            if fields.is_empty() || fields.iter().any(String::is_empty) {
                return Err(Error::invalid(
                    "concurrency_key_fields",
                    "must name at least one field, and no empty one",
                ));
            }
        }
        Ok(())
    }
}

/// The concurrency key a kind derives from the fields `fields` of `args` (JSON text): `kind:`
/// and the values joined by `/`, a string as it is, anything else as JSON.
fn derived_key(kind: &str, args: &str, fields: &[String]) -> Result<String> {
    let value: serde_json::Value = serde_json::from_str(args)?;
    let mut key = format!("{kind}:");
    for (i, field) in fields.iter().enumerate() {
        let v = value.get(field).ok_or_else(|| {
            Error::invalid(
                "concurrency_key",
                format!("the args of kind {kind} have no field `{field}` to make the key from"),
            )
        })?;
        if i > 0 {
            key.push('/');
        }
        match v {
            serde_json::Value::String(text) => key.push_str(text),
            other => key.push_str(&other.to_string()),
        }
    }
    Ok(key)
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
    /// The workflow the job is a step of: its completion or death lets the jobs that wait
    /// for it go on.
    pub workflow: Option<crate::workflow::WorkflowId>,
}

impl Lease {
    /// A new lease token. Every token made outside a statement is made here (statements that
    /// make theirs use the database's random UUID function): a UUID v4, 122 random bits, so a
    /// holder whose lease was lost cannot guess the one that replaced it.
    pub fn new_token() -> Uuid {
        Uuid::new_v4()
    }

    /// `n` new tokens, one per job of a claim ([`Lease::new_token`]).
    pub fn new_tokens(n: usize) -> Vec<Uuid> {
        (0..n).map(|_| Self::new_token()).collect()
    }

    /// When a lease of `duration` granted at `granted` (the database's clock) runs out, to the
    /// microsecond every dialect stores; `None` past the last time there is.
    pub fn expiry(granted: DateTime<Utc>, duration: Duration) -> Option<DateTime<Utc>> {
        let micros = i64::try_from(duration.as_micros()).unwrap_or(i64::MAX);
        granted.checked_add_signed(chrono::Duration::microseconds(micros))
    }
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
            workflow: job.workflow,
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

/// A handler's request to run its job again later without spending an attempt
/// ([`crate::Queue::snooze`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snooze {
    /// Due again this long after the database's now.
    pub delay: Duration,
    /// Most snoozes the job may have: a snooze beyond it is recorded as a failed attempt instead,
    /// so a job cannot snooze forever.
    pub max_snoozes: u32,
    /// What that failed attempt is: retryable after the queue's backoff (the default), after a
    /// delay of the caller's choosing (a kind's own backoff), or permanent.
    pub past_bound: FailureKind,
}

impl Snooze {
    /// A snooze of `delay`, bounded by [`DEFAULT_MAX_SNOOZES`]; past the bound a
    /// retryable failure.
    pub fn new(delay: Duration) -> Self {
        Snooze {
            delay,
            max_snoozes: DEFAULT_MAX_SNOOZES,
            past_bound: FailureKind::Retryable,
        }
    }

    /// Bounds the job's snoozes at `n`.
    pub fn max_snoozes(mut self, n: u32) -> Self {
        self.max_snoozes = n;
        self
    }

    /// Past the bound, records a failure of this kind.
    pub fn past_bound(mut self, kind: FailureKind) -> Self {
        self.past_bound = kind;
        self
    }
}

/// What [`crate::Queue::snooze`] did with the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnoozeOutcome {
    /// Back to pending, due after the delay; the attempt was given back and the snooze counted.
    Snoozed,
    /// The job had snoozed as often as allowed: the snooze was recorded as a failed attempt.
    Failed(FailOutcome),
}

/// A change to a pending job ([`crate::Queue::reschedule`]): what is `None` stays as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reschedule {
    /// When it becomes claimable (a delay runs from the database's now).
    pub run_at: Option<Schedule>,
    /// Its new priority.
    pub priority: Option<i32>,
}

impl Reschedule {
    /// No change yet.
    pub fn new() -> Self {
        Reschedule::default()
    }

    /// Claimable at once.
    pub fn now(mut self) -> Self {
        self.run_at = Some(Schedule::Now);
        self
    }

    /// Claimable `delay` after the database receives the change.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.run_at = Some(Schedule::After(delay));
        self
    }

    /// Claimable at `at`.
    pub fn run_at(mut self, at: DateTime<Utc>) -> Self {
        self.run_at = Some(Schedule::At(at));
        self
    }

    /// With priority `priority`.
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Checks the change: it changes something, and its time is in range (by the system clock).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `run_at` (or `delay`), or `reschedule` for an empty change.
    pub fn validate(&self) -> Result<()> {
        self.validate_at(Utc::now())
    }

    /// [`Reschedule::validate`] with `now` as the time a `run_at` is checked against.
    ///
    /// # Errors
    /// As [`Reschedule::validate`].
    pub fn validate_at(&self, now: DateTime<Utc>) -> Result<()> {
        match self.run_at {
            None if self.priority.is_none() => {
                return Err(Error::invalid(
                    "reschedule",
                    "must change the run time, the priority or both",
                ))
            }
            Some(Schedule::After(d)) => validate::delay(d)?,
            Some(Schedule::At(at)) => validate::run_at(at, now)?,
            _ => {}
        }
        Ok(())
    }

    /// The delay from the database's now, given the client's `now`; `None` keeps the run time.
    pub fn delay_from(&self, now: DateTime<Utc>) -> Option<Duration> {
        self.run_at.map(|s| match s {
            Schedule::Now => Duration::ZERO,
            Schedule::After(d) => d,
            Schedule::At(at) => (at - now).to_std().unwrap_or(Duration::ZERO),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct SyncAccount {
        account_id: u64,
        region: String,
    }

    impl JobArgs for SyncAccount {
        const KIND: &'static str = "sync_account";
        fn options() -> KindOptions {
            KindOptions::new().concurrency_key_from(["account_id", "region"])
        }
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Lacking {
        other: u8,
    }

    impl JobArgs for Lacking {
        const KIND: &'static str = "lacking";
        fn options() -> KindOptions {
            KindOptions::new().concurrency_key_from(["account_id"])
        }
    }

    #[test]
    fn a_kind_derives_the_concurrency_key_from_its_fields() {
        let args = SyncAccount {
            account_id: 42,
            region: "eu".into(),
        };
        let job = NewJob::of(&args).unwrap();
        assert_eq!(job.concurrency_key_value(), Some("sync_account:42/eu"));
        // A key set on the job replaces the derived one.
        let job = NewJob::of(&args).unwrap().concurrency_key("mine");
        assert_eq!(job.concurrency_key_value(), Some("mine"));
        match NewJob::of(&Lacking { other: 1 }) {
            Err(Error::InvalidInput { field, rule }) => {
                assert_eq!(field, "concurrency_key");
                assert!(rule.contains("`account_id`"), "{rule}");
            }
            other => panic!("{other:?}"),
        }
        let bad = KindOptions::new().concurrency_key_from(Vec::<String>::new());
        assert!(
            matches!(bad.validate(), Err(Error::InvalidInput { field, .. }) if field == "concurrency_key_fields")
        );
    }
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7396() {
        let mut v = json!({"a": "b", "c": {"d": "e", "f": "g"}});
        merge_patch(&mut v, &json!({"a": "z", "c": {"f": null}}));
        assert_eq!(v, json!({"a": "z", "c": {"d": "e"}}));
        let mut v = json!({"a": [1, 2]});
        merge_patch(&mut v, &json!({"a": [3], "n": {"x": null, "y": 1}}));
        assert_eq!(v, json!({"a": [3], "n": {"y": 1}}));
        let mut v = json!(null);
        merge_patch(&mut v, &json!({"k": 1}));
        assert_eq!(v, json!({"k": 1}));
    }

    #[test]
    fn stored_errors_decode_in_every_dialects_time_format() {
        let text = r#"[
            {"attempt": 1, "at": "2026-01-02T03:04:05.123456Z", "error": "a", "worker": "w"},
            {"attempt": 2, "at": "2026-01-02T04:04:05.123+01:00", "error": "b", "worker": null},
            {"attempt": 3, "at": "2026-01-02T03:04:06.1234567Z", "error": "c"},
            {"attempt": 4, "at": "2026-01-02 03:04:07.000001", "error": "d", "worker": "x"}
        ]"#;
        let errors = parse_errors(text).unwrap();
        assert_eq!(errors.len(), 4);
        assert_eq!(errors[0].at.timestamp_micros() % 1_000_000, 123_456);
        assert_eq!(
            errors[1].at,
            errors[0].at - chrono::Duration::microseconds(456)
        );
        assert_eq!(errors[2].worker, None);
        assert_eq!(errors[3].error, "d");
        assert_eq!(errors[3].at.timestamp_micros() % 1_000_000, 1);
        assert!(parse_errors("{}").is_err());
        assert!(parse_errors(r#"[{"attempt": 1, "at": "yesterday"}]"#).is_err());
    }

    #[test]
    fn reschedule_must_change_something() {
        assert!(Reschedule::new().validate().is_err());
        assert!(Reschedule::new().priority(3).validate().is_ok());
        assert!(Reschedule::new().now().validate().is_ok());
        assert!(Reschedule::new()
            .delay(Duration::from_secs(20 * 365 * 24 * 3600))
            .validate()
            .is_err());
    }
}
