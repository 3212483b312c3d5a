//! Unique jobs: a rule that makes a push meet the job that already stands for the same work
//! instead of adding a second one.
//!
//! A rule ([`Unique`]) names what makes two jobs the same (their kind, their queue, their args
//! or named fields of them, the window of time they are due in, their dedup key) and the states
//! in which a job holds its place. The engine turns the rule and the job into a key (a SHA-256
//! of those inputs, written canonically) and the states into a bit set; the database holds one
//! job per key among the rows whose state is in their own set, with a unique index over exactly
//! those rows, so two pushes that race never both insert. A job that leaves its states (it
//! completes, when completed is not one of them; it is cancelled or goes dead) frees the key.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::job::{JobId, JobState};
use crate::validate;

/// What a push did with a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PushOutcome {
    /// The job was stored under this id.
    Inserted(JobId),
    /// A job with the same unique key held its place in one of its states: nothing was stored;
    /// this is that job.
    Existing(JobId),
    /// As `Existing`, and that job was pending, so the push replaced its payload, priority and
    /// run time ([`Unique::replace`]).
    Replaced(JobId),
}

impl PushOutcome {
    /// The id of the job that stands for the push: the new one, or the one it met.
    pub fn id(&self) -> JobId {
        match self {
            PushOutcome::Inserted(id) | PushOutcome::Existing(id) | PushOutcome::Replaced(id) => {
                *id
            }
        }
    }

    /// Whether a new job was stored.
    pub fn inserted(&self) -> bool {
        matches!(self, PushOutcome::Inserted(_))
    }
}

/// Which part of the args (the payload) goes into the key.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ByArgs {
    /// None of it.
    No,
    /// The whole payload, canonically (object keys in order, no whitespace).
    Whole,
    /// These top-level fields of a JSON object payload.
    Fields(Vec<String>),
}

/// A uniqueness rule: at most one job with the same key holds its place in `states` at a time.
/// The key is made of the job's kind (unless [`Unique::any_kind`]), and whichever of these the
/// rule adds: its queue, its args (whole or some fields), the window of time it is due in, and
/// its dedup key when it has one. Build it from [`Unique::new`].
///
/// ```
/// use std::time::Duration;
/// use dbqueue::{JobState, Unique};
///
/// // One report per customer and day, whether still waiting, running or done.
/// let rule = Unique::new()
///     .by_fields(["customer_id"])
///     .by_period(Duration::from_secs(24 * 3600))
///     .states([JobState::Pending, JobState::Running, JobState::Completed]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unique {
    args: ByArgs,
    by_queue: bool,
    by_kind: bool,
    period: Option<Duration>,
    states: Vec<JobState>,
    replace: bool,
}

impl Default for Unique {
    fn default() -> Self {
        Unique::new()
    }
}

/// The states a unique job holds its place in unless its rule says otherwise: every state but
/// cancelled and dead.
pub const DEFAULT_UNIQUE_STATES: [JobState; 3] =
    [JobState::Pending, JobState::Running, JobState::Completed];

/// The longest window of [`Unique::by_period`].
pub const MAX_UNIQUE_PERIOD: Duration = validate::MAX_DELAY;

impl Unique {
    /// A rule keyed by the job's kind alone, in the default states ([`DEFAULT_UNIQUE_STATES`]);
    /// add what else tells jobs apart with the other methods.
    pub fn new() -> Self {
        Unique {
            args: ByArgs::No,
            by_queue: false,
            by_kind: true,
            period: None,
            states: DEFAULT_UNIQUE_STATES.to_vec(),
            replace: false,
        }
    }

    /// The whole payload is part of the key, canonically: the same JSON in another key order or
    /// with other whitespace is the same; numbers are compared as written (`1` is not `1.0`).
    pub fn by_args(mut self) -> Self {
        self.args = ByArgs::Whole;
        self
    }

    /// These top-level fields of the payload (a JSON object) are part of the key; a field the
    /// payload lacks is refused at push.
    pub fn by_fields<I, S>(mut self, fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args = ByArgs::Fields(fields.into_iter().map(Into::into).collect());
        self
    }

    /// The queue is part of the key (without it, the same job in two queues is the same job).
    pub fn by_queue(mut self) -> Self {
        self.by_queue = true;
        self
    }

    /// The kind is not part of the key: jobs of any kind with the same other inputs are the same.
    pub fn any_kind(mut self) -> Self {
        self.by_kind = false;
        self
    }

    /// The window of `period` that the job is due in is part of the key: windows are fixed
    /// (counted from the Unix epoch, in UTC), and a job is due at its `run_at` if it was pushed
    /// with one, else at the pushing host's now plus its delay; a job due in the next window is a
    /// different job. With `completed` among the states, "once per window".
    pub fn by_period(mut self, period: Duration) -> Self {
        self.period = Some(period);
        self
    }

    /// The states in which a job holds its place: pending and running, and any of completed,
    /// dead and cancelled. (A running job goes back to pending on a retry, a snooze or a
    /// release, which it could not do while another job held the key, so those two are always
    /// in.)
    pub fn states(mut self, states: impl IntoIterator<Item = JobState>) -> Self {
        let mut set: Vec<JobState> = Vec::new();
        for s in states {
            if !set.contains(&s) {
                set.push(s);
            }
        }
        self.states = set;
        self
    }

    /// On meeting a job that is still pending, replace its payload, priority and run time with
    /// this push's (a job that already started is left as it is).
    pub fn replace(mut self) -> Self {
        self.replace = true;
        self
    }

    /// Whether a clash with a pending job replaces it.
    pub fn replaces(&self) -> bool {
        self.replace
    }

    /// Checks the rule: states that include pending and running, a period of 1 ms to 10 years,
    /// field names that are not empty.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `unique.states`, `unique.period` or `unique.fields`.
    pub fn validate(&self) -> Result<()> {
        if self.states.is_empty() {
            return Err(Error::invalid(
                "unique.states",
                "must name at least one state in which a job holds its place",
            ));
        }
        if !(self.states.contains(&JobState::Pending) && self.states.contains(&JobState::Running)) {
            return Err(Error::invalid(
                "unique.states",
                "must include pending and running (a running job goes back to pending on a \
                 retry, a snooze or a release, which it could not do while another job held \
                 the key); add completed, dead or cancelled to hold the key longer",
            ));
        }
        if let Some(p) = self.period {
            if p < Duration::from_millis(1) || p > MAX_UNIQUE_PERIOD {
                return Err(Error::invalid(
                    "unique.period",
                    "must be between 1 ms and 10 years",
                ));
            }
        }
        if let ByArgs::Fields(fields) = &self.args {
            if fields.is_empty() {
                return Err(Error::invalid(
                    "unique.fields",
                    "must name at least one field (or use by_args for the whole payload)",
                ));
            }
            if fields.iter().any(String::is_empty) {
                return Err(Error::invalid("unique.fields", "a field name is empty"));
            }
        }
        Ok(())
    }

    /// The states as a bit set (pending 1, running 2, completed 4, dead 8, cancelled 16), as
    /// the databases store it beside the key.
    pub fn state_bits(&self) -> i16 {
        self.states.iter().fold(0, |bits, s| bits | state_bit(*s))
    }

    /// The key of a job with this rule: `kind`, `queue`, `payload` (JSON text), `due` (when it
    /// becomes claimable, by the pushing host's clock) and `dedup_key`, as the rule takes them.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `unique.fields` when the payload is not an object or lacks
    /// a field, or `unique` when nothing tells jobs apart (no kind, args, queue, period or
    /// dedup key).
    pub fn key(
        &self,
        kind: Option<&str>,
        queue: &str,
        payload: &str,
        due: DateTime<Utc>,
        dedup_key: Option<&str>,
    ) -> Result<[u8; 32]> {
        let kind = kind.filter(|_| self.by_kind);
        let queue = self.by_queue.then_some(queue);
        let args = match &self.args {
            ByArgs::No => Value::Null,
            // serde_json's maps keep their keys in order: the text is canonical.
            ByArgs::Whole => serde_json::from_str(payload)
                .map_err(|e| Error::invalid("payload", format!("must be valid JSON ({e})")))?,
            ByArgs::Fields(fields) => {
                let Ok(Value::Object(map)) = serde_json::from_str::<Value>(payload) else {
                    return Err(Error::invalid(
                        "unique.fields",
                        "names fields, so the payload must be a JSON object",
                    ));
                };
                let mut picked = serde_json::Map::new();
                for f in fields {
                    let Some(v) = map.get(f) else {
                        return Err(Error::invalid(
                            "unique.fields",
                            format!("names the field {f:?}, which the payload does not have"),
                        ));
                    };
                    picked.insert(f.clone(), v.clone());
                }
                Value::Object(picked)
            }
        };
        let slot = self.period.map(|p| {
            let millis = i128::from(due.timestamp_millis());
            let window = i128::try_from(p.as_millis()).unwrap_or(i128::MAX).max(1);
            millis.div_euclid(window).to_string()
        });
        if kind.is_none()
            && queue.is_none()
            && args.is_null()
            && slot.is_none()
            && dedup_key.is_none()
        {
            return Err(Error::invalid(
                "unique",
                "has nothing to tell jobs apart: the job has no kind (or the rule takes any \
                 kind), and the rule takes no args, fields, queue or period, and there is no \
                 dedup key",
            ));
        }
        let material = serde_json::json!(["dbqueue.unique.1", kind, queue, args, slot, dedup_key]);
        let text = serde_json::to_vec(&material)?;
        Ok(Sha256::digest(&text).into())
    }
}

/// The bit of `state` in a unique rule's state set.
pub fn state_bit(state: JobState) -> i16 {
    match state {
        // A waiting job is a workflow's, and those cannot be unique.
        JobState::Waiting => 0,
        JobState::Pending => 1,
        JobState::Running => 2,
        JobState::Completed => 4,
        JobState::Dead => 8,
        JobState::Cancelled => 16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn args_are_canonical() {
        let r = Unique::new().by_args();
        let t = at("2026-01-01T00:00:00Z");
        let a = r
            .key(Some("k"), "q", r#"{"b": 1, "a": [1, 2]}"#, t, None)
            .unwrap();
        let b = r.key(Some("k"), "q", "{\"a\":[1,2],\n \"b\":1}", t, None);
        let c = r.key(Some("k"), "q", r#"{"a": [2, 1], "b": 1}"#, t, None);
        assert_eq!(a, b.unwrap());
        assert_ne!(a, c.unwrap());
        // The queue is not part of the key unless asked; the kind is.
        assert_eq!(
            r.key(Some("k"), "q1", "1", t, None).unwrap(),
            r.key(Some("k"), "q2", "1", t, None).unwrap()
        );
        assert_ne!(
            r.clone()
                .by_queue()
                .key(Some("k"), "q1", "1", t, None)
                .unwrap(),
            r.clone()
                .by_queue()
                .key(Some("k"), "q2", "1", t, None)
                .unwrap()
        );
        assert_ne!(
            r.key(Some("k"), "q", "1", t, None).unwrap(),
            r.key(Some("other"), "q", "1", t, None).unwrap()
        );
        assert_eq!(
            r.clone()
                .any_kind()
                .key(Some("k"), "q", "1", t, None)
                .unwrap(),
            r.clone()
                .any_kind()
                .key(Some("other"), "q", "1", t, None)
                .unwrap()
        );
    }

    #[test]
    fn fields_pick_what_they_name() {
        let r = Unique::new().by_fields(["customer"]);
        let t = at("2026-01-01T00:00:00Z");
        let a = r.key(Some("k"), "q", r#"{"customer": 7, "n": 1}"#, t, None);
        let b = r.key(Some("k"), "q", r#"{"n": 2, "customer": 7}"#, t, None);
        assert_eq!(a.unwrap(), b.unwrap());
        let missing = r.key(Some("k"), "q", r#"{"n": 2}"#, t, None).unwrap_err();
        assert!(
            matches!(missing, Error::InvalidInput { ref field, .. } if field == "unique.fields")
        );
        let not_object = r.key(Some("k"), "q", "[1]", t, None).unwrap_err();
        assert!(
            matches!(not_object, Error::InvalidInput { ref field, .. } if field == "unique.fields")
        );
    }

    #[test]
    fn periods_are_fixed_windows() {
        let r = Unique::new().by_period(Duration::from_secs(3600));
        let k = |t| r.key(Some("k"), "q", "1", at(t), None).unwrap();
        assert_eq!(k("2026-01-01T10:00:00Z"), k("2026-01-01T10:59:59.999Z"));
        assert_ne!(k("2026-01-01T10:59:59.999Z"), k("2026-01-01T11:00:00Z"));
        // Before the epoch too.
        assert_ne!(k("1969-12-31T23:59:59Z"), k("1970-01-01T00:00:00Z"));
    }

    #[test]
    fn the_dedup_key_is_one_more_input() {
        let r = Unique::new();
        let t = at("2026-01-01T00:00:00Z");
        assert_ne!(
            r.key(Some("k"), "q", "1", t, Some("a")).unwrap(),
            r.key(Some("k"), "q", "1", t, Some("b")).unwrap()
        );
        assert!(Unique::new().key(None, "q", "1", t, Some("a")).is_ok());
    }

    #[test]
    fn bad_rules_name_the_field() {
        let field = |r: Unique| match r.validate() {
            Err(Error::InvalidInput { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(Unique::new().states([])), "unique.states");
        assert_eq!(
            field(Unique::new().by_period(Duration::ZERO)),
            "unique.period"
        );
        assert_eq!(
            field(Unique::new().by_period(Duration::from_secs(20 * 365 * 24 * 3600))),
            "unique.period"
        );
        assert_eq!(
            field(Unique::new().by_fields(Vec::<String>::new())),
            "unique.fields"
        );
        assert_eq!(field(Unique::new().by_fields([""])), "unique.fields");
        let t = at("2026-01-01T00:00:00Z");
        assert!(matches!(
            Unique::new().key(None, "q", "1", t, None),
            Err(Error::InvalidInput { ref field, .. }) if field == "unique"
        ));
        assert_eq!(
            field(Unique::new().states([JobState::Pending])),
            "unique.states"
        );
        assert_eq!(
            Unique::new()
                .states([
                    JobState::Pending,
                    JobState::Running,
                    JobState::Pending,
                    JobState::Dead
                ])
                .state_bits(),
            1 | 2 | 8
        );
    }
}
