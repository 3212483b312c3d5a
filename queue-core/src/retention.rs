//! Retention: finished jobs deleted by age, per state, by a maintenance task that runs in the
//! worker runtime once across all processes.
//!
//! ```
//! use std::time::Duration;
//! use dbqueue::{JobState, Retention};
//!
//! // Completed jobs an hour after they finish, cancelled after a day, dead jobs never.
//! let rules = Retention::default()
//!     .delete_after(JobState::Completed, Duration::from_secs(3600))
//!     .keep(JobState::Dead);
//! assert_eq!(rules.after(JobState::Cancelled), Some(Duration::from_secs(24 * 3600)));
//! assert_eq!(rules.after(JobState::Dead), None);
//! ```

use std::time::Duration;

use crate::error::{Error, Result};
use crate::job::JobState;
use crate::validate;

const HOUR: Duration = Duration::from_secs(3600);

/// Which finished jobs the retention task deletes, and how often it runs.
///
/// The default deletes completed and cancelled jobs 24 hours after they finished and dead jobs
/// after 7 days (dead jobs are what an operator looks into), every minute; a worker runs it
/// unless given [`Retention::off`]. A round runs in one process at a time whatever the number
/// of workers (a lease row in the database), deletes in bounded statements of a few thousand
/// rows each (never one long transaction), and logs what it deleted. The jobs of a workflow go
/// together, once every one of them is old enough for its state's rule: none while another
/// job of the workflow can still run or be retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retention {
    completed: Option<Duration>,
    cancelled: Option<Duration>,
    dead: Option<Duration>,
    interval: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            completed: Some(24 * HOUR),
            cancelled: Some(24 * HOUR),
            dead: Some(7 * 24 * HOUR),
            interval: Duration::from_secs(60),
        }
    }
}

/// The longest a retention round may take before another process may start one: a round stops
/// deleting when it nears this, and its remaining work waits for the next round.
pub const RETENTION_ROUND: Duration = Duration::from_secs(300);

/// The name of the retention task's lease row.
pub(crate) const RETENTION_TASK: &str = "retention";

impl Retention {
    /// Deletes nothing: a worker given this runs no retention task.
    pub fn off() -> Self {
        Retention {
            completed: None,
            cancelled: None,
            dead: None,
            ..Retention::default()
        }
    }

    /// Deletes jobs in `state` (a finished state) once they finished longer ago than `after`.
    /// A state that is not finished is reported by [`Retention::validate`].
    pub fn delete_after(mut self, state: JobState, after: Duration) -> Self {
        self.set(state, Some(after));
        self
    }

    /// Never deletes jobs in `state`.
    pub fn keep(mut self, state: JobState) -> Self {
        self.set(state, None);
        self
    }

    /// How often a round runs, across all processes (default one minute).
    pub fn interval(mut self, every: Duration) -> Self {
        self.interval = every;
        self
    }

    /// How long after finishing a job in `state` is deleted; `None` when it is kept.
    pub fn after(&self, state: JobState) -> Option<Duration> {
        match state {
            JobState::Completed => self.completed,
            JobState::Cancelled => self.cancelled,
            JobState::Dead => self.dead,
            JobState::Waiting | JobState::Pending | JobState::Running => None,
        }
    }

    /// How often a round runs.
    pub fn every(&self) -> Duration {
        self.interval
    }

    /// Whether any state is deleted at all.
    pub fn is_off(&self) -> bool {
        self.rules().is_empty()
    }

    /// The finished states deleted, each with its age, in the order a round deletes them.
    pub fn rules(&self) -> Vec<(JobState, Duration)> {
        JobState::FINISHED
            .iter()
            .filter_map(|s| self.after(*s).map(|d| (*s, d)))
            .collect()
    }

    fn set(&mut self, state: JobState, after: Option<Duration>) {
        match state {
            JobState::Completed => self.completed = after,
            JobState::Cancelled => self.cancelled = after,
            JobState::Dead => self.dead = after,
            // Remembered as an impossible rule, so that validate names it.
            JobState::Waiting | JobState::Pending | JobState::Running => {
                self.interval = Duration::MAX;
            }
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field: an age over 10 years, an interval outside
    /// 1 s ..= 1 day, or a rule for a state that is not finished.
    pub fn validate(&self) -> Result<()> {
        if self.interval == Duration::MAX {
            return Err(Error::invalid(
                "retention.state",
                "only finished states (completed, dead, cancelled) are deleted by age",
            ));
        }
        for (state, after) in self.rules() {
            validate::delay(after).map_err(|_| {
                Error::invalid(format!("retention.{state}"), "must be at most 10 years")
            })?;
        }
        if !(Duration::from_secs(1)..=24 * HOUR).contains(&self.interval) {
            return Err(Error::invalid(
                "retention.interval",
                "must be between 1 second and 1 day",
            ));
        }
        Ok(())
    }
}

/// What one retention round deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetentionReport {
    /// Completed jobs deleted.
    pub completed: u64,
    /// Cancelled jobs deleted.
    pub cancelled: u64,
    /// Dead jobs deleted.
    pub dead: u64,
    /// Counts of key rate limits' windows that had ended, deleted (one row per key of a queue
    /// with a key rate limit; a key's count is kept only while its window lasts).
    pub key_rate_counts: u64,
    /// Workflows deleted, each with its jobs, steps and dependencies (its rows in `workflows`,
    /// `workflow_jobs` and `job_deps`): a workflow's jobs go together, once every one of them
    /// has been finished longer than its state's age (a state the rules keep keeps its
    /// workflows), so none is deleted while another job of its workflow can still run or be
    /// retried.
    pub workflows: u64,
    /// The jobs of those workflows (part of [`RetentionReport::total`], not of the three
    /// counts by state).
    pub workflow_jobs: u64,
    /// The round stopped at its time limit ([`RETENTION_ROUND`]) with rows left to delete;
    /// the next round goes on.
    pub unfinished: bool,
}

impl RetentionReport {
    /// Every job deleted (completed, cancelled and dead, and the jobs of workflows; the key
    /// rate counts have their own field).
    pub fn total(&self) -> u64 {
        self.completed + self.cancelled + self.dead + self.workflow_jobs
    }

    pub(crate) fn add(&mut self, state: JobState, n: u64) {
        match state {
            JobState::Completed => self.completed += n,
            JobState::Cancelled => self.cancelled += n,
            JobState::Dead => self.dead += n,
            JobState::Waiting | JobState::Pending | JobState::Running => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_rules() {
        let r = Retention::default();
        assert_eq!(
            r.rules(),
            vec![
                (JobState::Completed, 24 * HOUR),
                (JobState::Dead, 7 * 24 * HOUR),
                (JobState::Cancelled, 24 * HOUR),
            ]
        );
        assert!(r.validate().is_ok());
        assert!(Retention::off().is_off());
        let r = Retention::off().delete_after(JobState::Dead, HOUR);
        assert_eq!(r.rules(), vec![(JobState::Dead, HOUR)]);
    }

    #[test]
    fn bad_rules_name_their_field() {
        let field = |r: Retention| match r.validate() {
            Err(Error::InvalidInput { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(Retention::default().interval(Duration::ZERO)),
            "retention.interval"
        );
        assert_eq!(
            field(Retention::default().delete_after(JobState::Dead, 11 * 366 * 24 * HOUR)),
            "retention.dead"
        );
        assert_eq!(
            field(Retention::default().delete_after(JobState::Pending, HOUR)),
            "retention.state"
        );
    }
}
