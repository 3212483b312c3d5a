//! Periodic jobs: schedules that push a job at every slot of a cron expression, exactly once per
//! slot however many processes run a [`Scheduler`], with no leader election.
//!
//! A schedule ([`PeriodicJob`]) is a name, a cron expression (five fields, or six with seconds
//! first) in an IANA time zone, the queue, payload, priority and attempt budget of the jobs it
//! pushes, and a [`Misfire`] policy. Schedules live in the database's `schedules` table, which is
//! the source of truth: every process that runs a [`Scheduler`] fires every active schedule in
//! it, whoever registered it.
//!
//! **Exactly once per slot.** Each schedule row carries the last slot it enqueued and a version.
//! A scheduler that finds a slot due advances the row with a compare-and-set on the version it
//! read, and pushes the slot's job, in one transaction: both commit or neither does. A process
//! that loses the race changes nothing (its compare-and-set matches no row, or its push meets the
//! job's dedup key `schedule:<name>@<slot>`, the second fence, and it rolls back).
//!
//! **Which clock decides a slot.** A slot is due once the scheduler's clock has reached it; in
//! production that clock is the database's (`Queue::now`, which is the host's for SQLite), so
//! processes on hosts whose clocks disagree still agree on what is due. Tests inject a
//! [`ManualClock`]. A slot's job is pushed once its slot is due, so it is due at once; its dedup
//! key names the slot.
//!
//! **Misfires.** When no scheduler ran across one or more slots (every process was down), the
//! next tick enqueues only the latest missed slot ([`Misfire::Skip`], the default) or the latest
//! `max` of them ([`Misfire::CatchUp`]); older ones are dropped. A tick that finds two slots of
//! a schedule due at once (a schedule faster than the scheduler could tick) treats the earlier
//! one as missed in the same way.
//!
//! **Registration and removal.** Schedules registered in code ([`Registration::Code`], what a
//! [`Scheduler`] does at start) are written (created, or changed when their definition differs)
//! when the process starts, and hold a lease that the process renews every
//! [`SchedulerBuilder::refresh_interval`]: a code schedule that no process has renewed within
//! its lease ([`SchedulerBuilder::lease`], 5 minutes by default) stops firing, so removing a
//! schedule from the code and deploying stops it within one lease, with no SQL. The last
//! process to start writes the definition; renewals never rewrite it, so during a rolling deploy
//! the old processes keep the new definition alive rather than reverting it. A change of the
//! expression or time zone starts the schedule afresh: slots of the new expression before the
//! change are not enqueued. Schedules registered by an operator ([`Registration::Operator`],
//! `queue schedules add`) have no lease and fire until removed (`queue schedules remove`). An
//! operator cannot change or remove a code schedule while its lease runs; a code registration
//! under the name of an operator's schedule takes that schedule over.
//!
//! Daylight saving time: see [`Cadence`].

mod cadence;
mod clock;
mod scheduler;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::value::RawValue;

pub use cadence::{Cadence, MAX_EXPRESSION};
pub use clock::{Clock, DatabaseClock, ManualClock};
pub use scheduler::{Scheduler, SchedulerBuilder, SchedulerHandle, SchedulerProgress, LOG_TARGET};

use crate::error::{Error, Result};
use crate::job::{JobId, JobState, NewJob};
use crate::validate::{self, Limits};

/// Most missed slots [`Misfire::CatchUp`] may enqueue at once.
pub const MAX_CATCH_UP: u32 = 1_000;
/// The shortest lease of a code schedule.
pub const MIN_LEASE: Duration = Duration::from_secs(1);
/// The longest lease of a code schedule.
pub const MAX_LEASE: Duration = Duration::from_secs(7 * 24 * 3600);

/// What a tick does with the slots that passed while no scheduler ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Misfire {
    /// Enqueue only the latest missed slot (the default).
    #[default]
    Skip,
    /// Enqueue the latest `max` missed slots (1..=[`MAX_CATCH_UP`]), oldest first; older ones
    /// are dropped, so an outage never causes an unbounded burst.
    CatchUp {
        /// Most slots enqueued at once.
        max: u32,
    },
}

impl Misfire {
    /// The stored name: `skip` or `catch_up`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Misfire::Skip => "skip",
            Misfire::CatchUp { .. } => "catch_up",
        }
    }

    /// Most slots one tick enqueues.
    pub fn keep(&self) -> u32 {
        match self {
            Misfire::Skip => 1,
            Misfire::CatchUp { max } => *max,
        }
    }

    /// Checks the bound of [`Misfire::CatchUp`].
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `catch_up`.
    pub fn validate(&self) -> Result<()> {
        match self {
            Misfire::Skip => Ok(()),
            Misfire::CatchUp { max: 0 } => Err(Error::invalid(
                "catch_up",
                "must enqueue at least 1 missed slot (use skip to enqueue only the latest)",
            )),
            Misfire::CatchUp { max } if *max > MAX_CATCH_UP => Err(Error::invalid(
                "catch_up",
                format!("must enqueue at most {MAX_CATCH_UP} missed slots (got {max})"),
            )),
            Misfire::CatchUp { .. } => Ok(()),
        }
    }

    /// The policy stored as `kind` and `max`.
    ///
    /// # Errors
    /// [`Error::Database`] for an unknown kind.
    pub fn from_stored(kind: &str, max: u32) -> Result<Self> {
        match kind {
            "skip" => Ok(Misfire::Skip),
            "catch_up" => Ok(Misfire::CatchUp { max }),
            other => Err(Error::database(format!(
                "unknown misfire policy {other:?} in the schedules table"
            ))),
        }
    }
}

/// Who registered a stored schedule, which decides how long it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// A process's [`Scheduler`]: fires while some process renews its lease.
    Code,
    /// An operator (`queue schedules add`): fires until removed.
    Operator,
}

impl Origin {
    /// The stored name: `code` or `operator`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Origin::Code => "code",
            Origin::Operator => "operator",
        }
    }

    /// The origin stored as `s`.
    ///
    /// # Errors
    /// [`Error::Database`] for an unknown name.
    pub fn from_stored(s: &str) -> Result<Self> {
        match s {
            "code" => Ok(Origin::Code),
            "operator" => Ok(Origin::Operator),
            other => Err(Error::database(format!(
                "unknown schedule origin {other:?} in the schedules table"
            ))),
        }
    }
}

/// How a schedule is registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// By a process's code, with a lease that the process renews; the schedule stops firing
    /// once no process has renewed it for `lease`.
    Code {
        /// How long the registration lasts without a renewal.
        lease: Duration,
    },
    /// By an operator: until removed.
    Operator,
}

/// What a registration changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registered {
    /// The schedule did not exist.
    Created,
    /// Its definition (or origin) changed.
    Changed,
    /// It was stored as given already (a code schedule's lease was renewed).
    Unchanged,
}

/// A schedule: pushes a job to `queue` at every slot of a cron expression. Build it with
/// [`PeriodicJob::new`] and the builder methods; everything is checked by
/// [`PeriodicJob::validate`] before anything is stored.
#[derive(Clone, Debug)]
pub struct PeriodicJob {
    name: String,
    expression: String,
    time_zone: String,
    queue: String,
    kind: Option<String>,
    payload: Box<RawValue>,
    priority: i32,
    max_attempts: u32,
    misfire: Misfire,
}

impl PartialEq for PeriodicJob {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.expression == other.expression
            && self.time_zone == other.time_zone
            && self.queue == other.queue
            && self.kind == other.kind
            && self.payload.get() == other.payload.get()
            && self.priority == other.priority
            && self.max_attempts == other.max_attempts
            && self.misfire == other.misfire
    }
}

impl PeriodicJob {
    /// The schedule `name` pushing a job to `queue` with `payload` (serialized as JSON) at every
    /// slot of `expression`, in UTC unless [`PeriodicJob::time_zone`] says otherwise.
    ///
    /// # Errors
    /// [`Error::Payload`] when the payload cannot be serialized.
    pub fn new(
        name: impl Into<String>,
        expression: impl Into<String>,
        queue: impl Into<String>,
        payload: &impl Serialize,
    ) -> Result<Self> {
        let raw = serde_json::value::to_raw_value(payload)?;
        Ok(Self::from_raw(name, expression, queue, raw))
    }

    /// As [`PeriodicJob::new`], with a payload that is already JSON text.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `payload` when the text is not JSON.
    pub fn from_json(
        name: impl Into<String>,
        expression: impl Into<String>,
        queue: impl Into<String>,
        json: &str,
    ) -> Result<Self> {
        let raw = RawValue::from_string(json.to_owned())
            .map_err(|e| Error::invalid("payload", format!("must be valid JSON ({e})")))?;
        Ok(Self::from_raw(name, expression, queue, raw))
    }

    fn from_raw(
        name: impl Into<String>,
        expression: impl Into<String>,
        queue: impl Into<String>,
        payload: Box<RawValue>,
    ) -> Self {
        PeriodicJob {
            name: name.into(),
            expression: expression.into(),
            time_zone: "UTC".to_owned(),
            queue: queue.into(),
            kind: None,
            payload,
            priority: 0,
            max_attempts: NewJob::DEFAULT_MAX_ATTEMPTS,
            misfire: Misfire::Skip,
        }
    }

    /// The schedule `name` pushing a job of kind `A` with `args` at every slot of
    /// `expression`: in the queue, with the priority and the attempt budget that `A`'s
    /// options give (as [`NewJob::of`] does), so a worker routes it to `A`'s handler.
    ///
    /// # Errors
    /// [`Error::Payload`] when the args cannot be serialized.
    pub fn of<A: crate::JobArgs>(
        name: impl Into<String>,
        expression: impl Into<String>,
        args: &A,
    ) -> Result<Self> {
        let options = A::options();
        let queue = options
            .queue
            .clone()
            .unwrap_or_else(|| crate::job::DEFAULT_QUEUE.to_owned());
        let mut job = PeriodicJob::new(name, expression, queue, args)?.kind(A::KIND);
        if let Some(p) = options.priority {
            job = job.priority(p);
        }
        if let Some(n) = options.max_attempts {
            job = job.max_attempts(n);
        }
        Ok(job)
    }

    /// The kind of the jobs it pushes (default: none), which picks their handler in a worker
    /// that runs several kinds.
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// The IANA time zone whose wall clock the expression follows (default `UTC`).
    pub fn time_zone(mut self, time_zone: impl Into<String>) -> Self {
        self.time_zone = time_zone.into();
        self
    }

    /// The priority of the jobs it pushes (default 0).
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// The attempt budget of the jobs it pushes (default 25).
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// What to do with slots missed while no scheduler ran (default [`Misfire::Skip`]).
    pub fn misfire(mut self, misfire: Misfire) -> Self {
        self.misfire = misfire;
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its cron expression.
    pub fn expression(&self) -> &str {
        &self.expression
    }
    /// Its time zone's name.
    pub fn time_zone_name(&self) -> &str {
        &self.time_zone
    }
    /// The queue its jobs go to.
    pub fn queue(&self) -> &str {
        &self.queue
    }
    /// The kind of its jobs, if any.
    pub fn kind_value(&self) -> Option<&str> {
        self.kind.as_deref()
    }
    /// The payload of its jobs, as JSON text.
    pub fn payload_json(&self) -> &str {
        self.payload.get()
    }
    /// The priority of its jobs.
    pub fn priority_value(&self) -> i32 {
        self.priority
    }
    /// The attempt budget of its jobs.
    pub fn max_attempts_value(&self) -> u32 {
        self.max_attempts
    }
    /// Its misfire policy.
    pub fn misfire_policy(&self) -> Misfire {
        self.misfire
    }

    /// The expression in its time zone.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `expression` or `time_zone`.
    pub fn cadence(&self) -> Result<Cadence> {
        Cadence::parse(&self.expression, &self.time_zone)
    }

    /// Checks every rule against `limits`: the name (1..=128 characters of `A-Z a-z 0-9 _ . :
    /// -`), the expression, the time zone, the queue name, the kind's name, the payload's
    /// size, `max_attempts` and the misfire policy.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the first field that breaks a rule.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        validate::schedule_name(&self.name)?;
        self.cadence()?;
        validate::queue_name(&self.queue)?;
        if let Some(kind) = &self.kind {
            validate::kind(kind)?;
        }
        validate::payload(self.payload.get(), limits)?;
        validate::max_attempts(self.max_attempts)?;
        self.misfire.validate()
    }

    /// Whether `other` fires at the same slots (same expression and time zone).
    pub fn same_cadence(&self, other: &PeriodicJob) -> bool {
        self.expression == other.expression && self.time_zone == other.time_zone
    }

    /// The dedup key of the job of `slot`, unique per schedule and slot.
    pub fn dedup_key_for(&self, slot: DateTime<Utc>) -> String {
        format!(
            "schedule:{}@{}",
            self.name,
            slot.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
        )
    }

    /// The job of `slot`: due at the slot (at once, when the slot has passed), keyed by
    /// schedule and slot.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the stored payload is not JSON.
    pub fn job_for(&self, slot: DateTime<Utc>) -> Result<NewJob> {
        let job = NewJob::from_json(self.queue.as_str(), self.payload.get())?;
        let job = match &self.kind {
            Some(kind) => job.kind(kind.as_str()),
            None => job,
        };
        Ok(job
            .priority(self.priority)
            .max_attempts(self.max_attempts)
            .run_at(slot)
            .dedup_key(self.dedup_key_for(slot)))
    }
}

/// A stored schedule, as [`crate::Queue::schedules`] lists it.
#[derive(Clone, Debug)]
pub struct ScheduleInfo {
    /// Its definition.
    pub job: PeriodicJob,
    /// Who registered it.
    pub origin: Origin,
    /// Slots at or before this instant are never enqueued (when it was created, or its
    /// expression or time zone last changed).
    pub since: DateTime<Utc>,
    /// The last slot enqueued.
    pub last_slot: Option<DateTime<Utc>>,
    /// The job of the last slot.
    pub last_job: Option<JobId>,
    /// That job's state now; `None` when there is no last job or it was pruned.
    pub last_job_state: Option<JobState>,
    /// A code schedule's lease: it stops firing after this unless renewed. `None` for an
    /// operator's.
    pub expires_at: Option<DateTime<Utc>>,
    /// Changes at every registration that changed it and at every enqueued slot: the
    /// compare-and-set of a slot matches on it.
    pub version: i64,
    /// When it was created (scheduler clock).
    pub created_at: DateTime<Utc>,
    /// When it last changed (scheduler clock).
    pub updated_at: DateTime<Utc>,
}

impl ScheduleInfo {
    /// Whether it fires at `now`: an operator's always, a code schedule while its lease runs.
    pub fn is_active(&self, now: DateTime<Utc>) -> bool {
        match self.origin {
            Origin::Operator => true,
            Origin::Code => self.expires_at.is_some_and(|e| e > now),
        }
    }

    /// Slots after this instant are the ones not enqueued yet.
    pub fn anchor(&self) -> DateTime<Utc> {
        match self.last_slot {
            Some(last) if last > self.since => last,
            _ => self.since,
        }
    }

    /// The next slot it will enqueue as of `now`: the first after both its last slot and `now`
    /// (a slot missed before `now` is enqueued at the next tick, by its misfire policy).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the stored expression or time zone does not parse.
    pub fn next_slot(&self, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>> {
        Ok(self.job.cadence()?.next_after(self.anchor().max(now)))
    }
}

/// What one tick did.
#[derive(Clone, Debug, Default)]
pub struct TickReport {
    /// The slots this tick enqueued: schedule name, slot, job id.
    pub enqueued: Vec<(String, DateTime<Utc>, JobId)>,
    /// Schedules whose due slots another process enqueued first (this tick changed nothing
    /// for them).
    pub lost: usize,
    /// Schedules that could not be fired, with the reason (e.g. a stored expression that does
    /// not parse, or a database error); the others were fired.
    pub failed: Vec<(String, String)>,
    /// The earliest slot of any active schedule after this tick.
    pub next_slot: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field<T: std::fmt::Debug>(r: Result<T>) -> String {
        match r {
            Err(Error::InvalidInput { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_field_is_checked() {
        let limits = Limits::default();
        let ok = PeriodicJob::new("nightly", "0 3 * * *", "reports", &1).unwrap();
        ok.validate(&limits).unwrap();
        let bad = |j: PeriodicJob| field(j.validate(&limits));
        assert_eq!(
            bad(PeriodicJob::new("", "* * * * *", "q", &1).unwrap()),
            "name"
        );
        assert_eq!(
            bad(PeriodicJob::new("a b", "* * * * *", "q", &1).unwrap()),
            "name"
        );
        assert_eq!(
            bad(PeriodicJob::new("n", "not cron", "q", &1).unwrap()),
            "expression"
        );
        assert_eq!(
            bad(PeriodicJob::new("n", "* * * * *", "q", &1)
                .unwrap()
                .time_zone("Nowhere/Else")),
            "time_zone"
        );
        assert_eq!(
            bad(PeriodicJob::new("n", "* * * * *", "bad queue", &1).unwrap()),
            "queue"
        );
        assert_eq!(
            bad(PeriodicJob::new("n", "* * * * *", "q", &1)
                .unwrap()
                .max_attempts(0)),
            "max_attempts"
        );
        assert_eq!(
            bad(PeriodicJob::new("n", "* * * * *", "q", &1)
                .unwrap()
                .misfire(Misfire::CatchUp { max: 0 })),
            "catch_up"
        );
        assert_eq!(
            bad(PeriodicJob::new("n", "* * * * *", "q", &1)
                .unwrap()
                .misfire(Misfire::CatchUp {
                    max: MAX_CATCH_UP + 1
                })),
            "catch_up"
        );
        let tiny = Limits {
            max_payload_bytes: 4,
            ..Limits::default()
        };
        assert_eq!(
            field(
                PeriodicJob::new("n", "* * * * *", "q", &"a long payload")
                    .unwrap()
                    .validate(&tiny)
            ),
            "payload"
        );
    }

    #[test]
    fn a_slot_job_is_due_at_the_slot_and_keyed_by_it() {
        let p = PeriodicJob::new("tick", "* * * * * *", "q", &serde_json::json!({"a": 1}))
            .unwrap()
            .priority(3)
            .max_attempts(2);
        let slot = DateTime::parse_from_rfc3339("2026-01-01T00:00:05Z")
            .unwrap()
            .with_timezone(&Utc);
        let job = p.job_for(slot).unwrap();
        assert_eq!(job.queue(), "q");
        assert_eq!(job.priority_value(), 3);
        assert_eq!(job.max_attempts_value(), 2);
        assert_eq!(job.schedule(), crate::job::Schedule::At(slot));
        assert_eq!(
            job.dedup_key_value(),
            Some("schedule:tick@2026-01-01T00:00:05.000000Z")
        );
        // The longest name still makes a valid key.
        let long = PeriodicJob::new("n".repeat(128), "* * * * *", "q", &1).unwrap();
        validate::dedup_key(&long.dedup_key_for(slot)).unwrap();
    }
}
