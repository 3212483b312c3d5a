//! The ids and the states of the job model, which the errors name: a leaf that imports nothing
//! else of the crate, so `error` can depend on it without depending on `job` or `workflow`
//! (their parsing, which returns this crate's errors, lives there). Re-exported from `job` and
//! `workflow`.

use std::fmt;

use uuid::Uuid;

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

impl From<Uuid> for JobId {
    fn from(u: Uuid) -> Self {
        JobId(u)
    }
}

/// Where a job is in its life. See the state diagram in the crate docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// A job of a workflow waiting for the jobs it depends on; pending once they have
    /// finished as it needs (see [`crate::workflow`]).
    Waiting,
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
    pub const ALL: [JobState; 6] = [
        JobState::Waiting,
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
            JobState::Waiting => "waiting",
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

/// A workflow's id: a UUID v7 made at build time (or given with
/// [`Workflow::with_id`](crate::workflow::Workflow::with_id)).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct WorkflowId(pub Uuid);

impl WorkflowId {
    /// A new time-ordered id.
    pub fn new() -> Self {
        WorkflowId(Uuid::now_v7())
    }
}

impl Default for WorkflowId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for WorkflowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
