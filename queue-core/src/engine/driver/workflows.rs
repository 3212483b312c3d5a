//! [`Workflows`]: workflow rows, their steps and dependencies, and the statements that settle
//! the jobs waiting for a finished one.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::job::{Job, JobId, JobState};
use crate::workflow::{DepPolicy, Dependency, WorkflowId};

use super::{Lifecycle, Target};

/// `workflow_insert`: a workflow's row.
#[derive(Clone, Copy, Debug)]
pub struct WorkflowInsert<'a> {
    /// Its id (the primary key: a second push of it is a unique violation,
    /// [`UniqueIndex::WorkflowId`](super::UniqueIndex::WorkflowId)).
    pub id: WorkflowId,
    /// Its name.
    pub name: Option<&'a str>,
    /// An open batch: its callback waits until `workflow_seal`.
    pub open: bool,
    /// A batch's callback job.
    pub callback: Option<JobId>,
}

/// A workflow's row as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredWorkflow {
    /// Its id.
    pub id: WorkflowId,
    /// Its name.
    pub name: Option<String>,
    /// An open batch.
    pub open: bool,
    /// A batch's callback job.
    pub callback: Option<JobId>,
    /// When it was inserted (database clock).
    pub created_at: DateTime<Utc>,
}

/// One dependency of a workflow's job: `job` waits for `dep` as `policy` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkflowEdge {
    /// The job that waits.
    pub job: JobId,
    /// The job it waits for.
    pub dep: JobId,
    /// What it needs of it.
    pub policy: DepPolicy,
}

/// `workflow_prune_lock`: the next page of workflows retention looks at.
#[derive(Clone, Copy, Debug)]
pub struct WorkflowPruneLock {
    /// Only workflows created longer ago than this, by the database's clock (the rules'
    /// shortest age: a workflow's jobs finish after it was created).
    pub older_than: Duration,
    /// After this `(created_at, id)`: the last row of the previous page.
    pub after: Option<(DateTime<Utc>, WorkflowId)>,
    /// Most rows.
    pub limit: usize,
}

/// `workflow_prune`: the locked workflows to delete where every job of theirs allows it.
#[derive(Clone, Copy, Debug)]
pub struct WorkflowPrune<'a> {
    /// The workflows (locked by `workflow_prune_lock`).
    pub ids: &'a [WorkflowId],
    /// How long after finishing a completed job may go; `None`: completed jobs are kept.
    pub completed: Option<Duration>,
    /// The same for dead jobs.
    pub dead: Option<Duration>,
    /// The same for cancelled jobs.
    pub cancelled: Option<Duration>,
}

impl WorkflowPrune<'_> {
    /// The age of `state` (`None` for a state that is kept or not finished).
    pub fn age(&self, state: JobState) -> Option<Duration> {
        match state {
            JobState::Completed => self.completed,
            JobState::Dead => self.dead,
            JobState::Cancelled => self.cancelled,
            JobState::Waiting | JobState::Pending | JobState::Running => None,
        }
    }
}

/// What `workflow_prune` deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkflowPruned {
    /// Workflows (their rows, steps and dependencies).
    pub workflows: u64,
    /// Their jobs.
    pub jobs: u64,
}

/// Workflows. A workflow is a row of the `workflows` table, its jobs (inserted by
/// `job_insert`, each carrying its `workflow_id`, waiting when it has dependencies), one row per
/// job in `workflow_jobs` (workflow, job, step name) and one per dependency in `job_deps`
/// (dependency, job, policy). The engine inserts them in one transaction (the driver's or the
/// caller's), and after a workflow job finishes it settles the jobs waiting for it
/// (`workflow_dependents`, `workflow_block`, `workflow_promote`), each statement deciding from
/// committed states only, so that whichever finisher commits last promotes.
#[async_trait]
pub trait Workflows: Lifecycle {
    /// `workflow_insert`: the workflow's row, `created_at` the database's now.
    async fn workflow_insert(
        &self,
        conn: &mut Self::Conn,
        w: WorkflowInsert<'_>,
    ) -> Result<(), Self::Error>;

    /// `workflow_steps_insert`: one `workflow_jobs` row per `(job, step)` of `workflow`.
    async fn workflow_steps_insert(
        &self,
        conn: &mut Self::Conn,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<(), Self::Error>;

    /// `workflow_deps_insert`: one `job_deps` row per edge.
    async fn workflow_deps_insert(
        &self,
        conn: &mut Self::Conn,
        edges: &[WorkflowEdge],
    ) -> Result<(), Self::Error>;

    /// `workflow_lock`: the workflow's row, locked until the transaction ends (`SELECT ... FOR
    /// UPDATE`, `UPDLOCK`; SQLite: the transaction's write lock), `None` when there is none.
    async fn workflow_lock(
        &self,
        conn: &mut Self::Conn,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>, Self::Error>;

    /// `workflow_seal`: an open workflow closed (`open` false); rows changed.
    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64, Self::Error>;

    /// `workflow_dependents`: the waiting jobs that depend on any of `finished`.
    async fn workflow_dependents(
        &self,
        target: Target<'_, Self::Conn>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>, Self::Error>;

    /// `workflow_block`: each of `waiting` that is still waiting and has a dependency of
    /// policy `Completed` that is dead, cancelled or no longer exists (deleted) becomes
    /// cancelled (`finished_at` and `updated_at` now, `version` + 1), `blocked_by` that
    /// dependency (the least id of such); the jobs cancelled. Decided from committed states,
    /// and the rows of dead or cancelled dependencies it decides from are read with a lock
    /// that a retry of them waits for (or that waits for a retry of them to commit, and then
    /// sees it), so that a retry always finds, and reopens, what this cancels.
    async fn workflow_block(
        &self,
        target: Target<'_, Self::Conn>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>, Self::Error>;

    /// `workflow_promote`: each of `waiting` that is still waiting, whose every dependency is
    /// resolved (policy `Completed`: completed; `AnyOutcome`: completed, dead, cancelled or
    /// deleted; a deleted dependency of policy `Completed` is never resolved: `workflow_block`
    /// cancels its dependents) and that is not the callback of an
    /// open workflow, becomes pending, due at the later of its `run_at` and now (`updated_at`
    /// now, `version` + 1); the jobs promoted, with their queues. Decided from committed
    /// states only.
    async fn workflow_promote(
        &self,
        target: Target<'_, Self::Conn>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>, Self::Error>;

    /// `workflow_reopen`: in the retry's transaction, the cancelled jobs whose `blocked_by` is
    /// one of `retried` become waiting again (`blocked_by` and `finished_at` NULL, `updated_at`
    /// now, `version` + 1); the jobs reopened.
    async fn workflow_reopen(
        &self,
        conn: &mut Self::Conn,
        retried: &[JobId],
    ) -> Result<Vec<JobId>, Self::Error>;

    /// `workflow_blocked`: in the retry's transaction, after `workflow_lock` of their
    /// workflows: of `ids`, the jobs that have a dependency of policy `Completed` that is dead,
    /// cancelled or deleted, each with the least such dependency (what a retry of them would
    /// wait for in vain).
    async fn workflow_blocked(
        &self,
        conn: &mut Self::Conn,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>, Self::Error>;

    /// `workflow_waiting`: up to `limit` waiting jobs in id order, after `after` when given
    /// (the sweep that settles what a crash left unsettled).
    async fn workflow_waiting(
        &self,
        after: Option<JobId>,
        limit: usize,
    ) -> Result<Vec<JobId>, Self::Error>;

    /// `workflow_get`: the workflow's row.
    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>, Self::Error>;

    /// `workflow_jobs`: the workflow's jobs in id order, each with its step name (`Job::step`
    /// set; the columns of `job_list`).
    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>, Self::Error>;

    /// `workflow_edges`: the dependencies of the workflow's jobs.
    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>, Self::Error>;

    /// `workflow_list`: up to `limit` workflows, newest first (by id), below `before` when
    /// given, each with how many of its jobs are in each state.
    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>, Self::Error>;

    /// `workflow_prune_lock`: in a transaction of the driver's, the first step of retention's
    /// deletion of whole workflows: up to `p.limit` workflows created longer than
    /// `p.older_than` ago (database clock), after `p.after` in `(created_at, id)` order, in
    /// that order, locked as `workflow_lock` locks them, skipping the rows another transaction
    /// holds (a retry or a `batch_add` of that workflow: it is looked at again next round).
    /// Read along the index of `(created_at, id)`, never the whole table.
    async fn workflow_prune_lock(
        &self,
        conn: &mut Self::Conn,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>, Self::Error>;

    /// `workflow_prune`: in the same transaction, after `workflow_prune_lock` (a statement of
    /// its own, so that what it reads is committed after the locks were taken): deletes each
    /// workflow of `p.ids` every one of whose jobs is finished, and finished longer ago than
    /// its state's age (a state without an age is kept, and keeps its workflow), with all of
    /// its jobs, their `workflow_jobs` and `job_deps` rows, and the workflow's row. A workflow
    /// none of whose jobs exists any more goes too. Each workflow's jobs are read through
    /// `workflow_jobs`' primary key and the jobs table's, never by a scan.
    async fn workflow_prune(
        &self,
        conn: &mut Self::Conn,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned, Self::Error>;

    /// `job_deps`: what job `id` depends on, each with its step, policy, and its job's state
    /// and output (`None` when that job no longer exists), in the dependencies' id order.
    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>, Self::Error>;
}
