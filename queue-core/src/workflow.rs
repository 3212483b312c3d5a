//! Workflows: jobs pushed together, some of which wait for others.
//!
//! A [`Workflow`] is a set of named steps, each a [`NewJob`], where a step may depend on other
//! steps of the same workflow. [`Queue::push_workflow`](crate::Queue::push_workflow) stores
//! every job of it or none, in one transaction (also inside a caller's, with a backend's
//! `push_workflow_in_tx`). A step without dependencies is pending at once; a step with some
//! waits ([`JobState::Waiting`]) and becomes pending when every job it depends on has
//! finished as its [`Dep`] asks (by default: completed). When a dependency ends dead or
//! cancelled, the steps that need it completed are cancelled ([`Job::blocked_by`] names it);
//! those that said [`Dep::run_anyway`] run all the same. Retrying the dead job (`queue retry`,
//! the dashboard, [`Queue::retry`](crate::Queue::retry)) puts the steps it cancelled back to
//! waiting, and they run when it completes.
//!
//! A chain is a workflow of a line ([`Workflow::then`]); a batch is N jobs and a callback that
//! runs once when all of them have finished, whatever their outcome ([`Workflow::batch`]),
//! and an open batch takes more jobs until it is sealed ([`Workflow::open_batch`],
//! [`Queue::batch_add`](crate::Queue::batch_add), [`Queue::batch_seal`](crate::Queue::batch_seal)).
//! A job reads what its dependencies recorded with
//! [`JobContext::dependencies`](crate::worker::JobContext::dependencies).

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::error::{Error, Result};
pub use crate::ids::WorkflowId;
use crate::job::{Job, JobId, JobState, NewJob};

impl FromStr for WorkflowId {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Uuid::parse_str(s).map(WorkflowId).map_err(|_| {
            Error::invalid(
                "workflow",
                "must be a UUID such as 0190f0e4-1c2b-7d3e-8f00-123456789abc",
            )
        })
    }
}

/// What a step needs of one of its dependencies before it may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DepPolicy {
    /// The dependency must complete; if it ends dead or cancelled, the step is cancelled.
    Completed,
    /// The dependency must finish, whatever its outcome (completed, dead or cancelled).
    AnyOutcome,
}

impl DepPolicy {
    /// The number stored in the database: 0 for `Completed`, 1 for `AnyOutcome`.
    pub fn code(self) -> i16 {
        match self {
            DepPolicy::Completed => 0,
            DepPolicy::AnyOutcome => 1,
        }
    }

    /// The policy of a stored number (anything but 1 is `Completed`).
    pub fn from_code(code: i64) -> Self {
        if code == 1 {
            DepPolicy::AnyOutcome
        } else {
            DepPolicy::Completed
        }
    }

    /// Whether a dependency in `state` no longer holds the step back.
    pub fn resolved_by(self, state: JobState) -> bool {
        match self {
            DepPolicy::Completed => state == JobState::Completed,
            DepPolicy::AnyOutcome => state.is_finished(),
        }
    }
}

/// One dependency of a step: the step it waits for and what it needs of it. `"a".into()` is
/// `Dep::on("a")`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dep {
    step: String,
    policy: DepPolicy,
}

impl Dep {
    /// Waits for `step` to complete; if it ends dead or cancelled, this step is cancelled.
    pub fn on(step: impl Into<String>) -> Self {
        Dep {
            step: step.into(),
            policy: DepPolicy::Completed,
        }
    }

    /// Waits for `step` to finish and runs whatever its outcome.
    pub fn run_anyway(mut self) -> Self {
        self.policy = DepPolicy::AnyOutcome;
        self
    }

    /// The step waited for.
    pub fn step(&self) -> &str {
        &self.step
    }

    /// What is needed of it.
    pub fn policy(&self) -> DepPolicy {
        self.policy
    }
}

impl From<&str> for Dep {
    fn from(step: &str) -> Self {
        Dep::on(step)
    }
}

impl From<String> for Dep {
    fn from(step: String) -> Self {
        Dep::on(step)
    }
}

impl From<&String> for Dep {
    fn from(step: &String) -> Self {
        Dep::on(step.as_str())
    }
}

/// One step of a workflow: its name, its job and what it waits for.
#[derive(Clone, Debug)]
pub struct Step {
    pub(crate) name: String,
    pub(crate) job: NewJob,
    pub(crate) deps: Vec<Dep>,
}

impl Step {
    /// Its name, unique within the workflow.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its job.
    pub fn job(&self) -> &NewJob {
        &self.job
    }

    /// What it waits for.
    pub fn deps(&self) -> &[Dep] {
        &self.deps
    }
}

/// Jobs pushed together, some of which wait for others. Built with [`Workflow::new`] and the
/// methods below; checked in full (names, dependencies, cycles, each job) before anything is
/// stored.
///
/// ```
/// # use dbqueue_core::{NewJob, Workflow, Dep};
/// # fn job(n: u32) -> NewJob { NewJob::new("media", &n).unwrap() }
/// // A diamond: b and c after a, d after both (and after c even if c fails).
/// let wf = Workflow::new()
///     .name("album-42")
///     .add("a", job(1))
///     .add_after("b", job(2), ["a"])
///     .add_after("c", job(3), ["a"])
///     .add_after("d", job(4), [Dep::on("b"), Dep::on("c").run_anyway()]);
/// assert_eq!(wf.steps().len(), 4);
/// ```
#[derive(Clone, Debug)]
pub struct Workflow {
    pub(crate) id: WorkflowId,
    pub(crate) name: Option<String>,
    pub(crate) steps: Vec<Step>,
    /// An open batch: the callback step waits until the workflow is sealed.
    pub(crate) open: bool,
    /// The batch's callback step, if this is a batch.
    pub(crate) callback: Option<String>,
}

impl Default for Workflow {
    fn default() -> Self {
        Self::new()
    }
}

/// The name of a batch's callback step.
pub const CALLBACK_STEP: &str = "callback";

impl Workflow {
    /// An empty workflow with a new id.
    pub fn new() -> Self {
        Workflow {
            id: WorkflowId::new(),
            name: None,
            steps: Vec::new(),
            open: false,
            callback: None,
        }
    }

    /// A chain: each job runs after the one before it completed (steps named `1`, `2`, ...).
    pub fn chain(jobs: impl IntoIterator<Item = NewJob>) -> Self {
        jobs.into_iter()
            .enumerate()
            .fold(Workflow::new(), |wf, (i, job)| {
                wf.then(format!("{}", i + 1), job)
            })
    }

    /// A batch: `members` (steps named `1`, `2`, ...) and `callback` (the step
    /// [`CALLBACK_STEP`]), which runs once every member has finished, whatever its outcome; it
    /// reads how many completed, died or were cancelled with
    /// [`JobContext::batch_counts`](crate::worker::JobContext::batch_counts).
    pub fn batch(members: impl IntoIterator<Item = NewJob>, callback: NewJob) -> Self {
        let mut wf = Workflow::new();
        let mut names = Vec::new();
        for (i, job) in members.into_iter().enumerate() {
            let name = format!("{}", i + 1);
            wf = wf.add(name.clone(), job);
            names.push(Dep::on(name).run_anyway());
        }
        wf.callback = Some(CALLBACK_STEP.to_owned());
        wf.add_after(CALLBACK_STEP, callback, names)
    }

    /// An open batch: only its callback for now. Add members with
    /// [`Queue::batch_add`](crate::Queue::batch_add) (any number of times, each call all or
    /// nothing), then [`Queue::batch_seal`](crate::Queue::batch_seal) it; the callback runs
    /// once it is sealed and every member has finished.
    pub fn open_batch(callback: NewJob) -> Self {
        let mut wf = Workflow::new();
        wf.open = true;
        wf.callback = Some(CALLBACK_STEP.to_owned());
        wf.add(CALLBACK_STEP, callback)
    }

    /// Names it (shown by the dashboard and the CLI; not unique).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Gives it this id instead of a new one: pushing a workflow whose id exists is refused
    /// as a duplicate, which makes a retried push idempotent.
    pub fn with_id(mut self, id: WorkflowId) -> Self {
        self.id = id;
        self
    }

    /// Adds step `name` running `job`, with no dependencies.
    pub fn add(self, name: impl Into<String>, job: NewJob) -> Self {
        self.add_after(name, job, std::iter::empty::<Dep>())
    }

    /// Adds step `name` running `job` once `deps` allow (each a step name, or a [`Dep`]).
    pub fn add_after<D: Into<Dep>>(
        mut self,
        name: impl Into<String>,
        job: NewJob,
        deps: impl IntoIterator<Item = D>,
    ) -> Self {
        self.steps.push(Step {
            name: name.into(),
            job,
            deps: deps.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Adds step `name` running `job` after the step added last has completed (the first
    /// step of a chain has no dependency).
    pub fn then(self, name: impl Into<String>, job: NewJob) -> Self {
        let last = self.steps.last().map(|s| Dep::on(s.name.clone()));
        self.add_after(name, job, last)
    }

    /// Its id.
    pub fn id(&self) -> WorkflowId {
        self.id
    }

    /// Its name.
    pub fn name_value(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Its steps, in the order they were added.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Checks names, dependencies and the absence of cycles, then each job (as a push would,
    /// at the host's `now`): a step of a workflow may not have a dedup key or a unique rule.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field and the rule.
    pub fn validate_at(&self, limits: &crate::validate::Limits, now: DateTime<Utc>) -> Result<()> {
        if self.steps.is_empty() {
            return Err(Error::invalid(
                "workflow",
                "must have at least one step (an empty workflow would never finish)",
            ));
        }
        if self.steps.len() > limits.max_batch {
            return Err(Error::invalid(
                "workflow",
                format!(
                    "has {} steps; at most {} (the queue's max_batch)",
                    self.steps.len(),
                    limits.max_batch
                ),
            ));
        }
        if let Some(name) = &self.name {
            if name.is_empty() || name.chars().count() > MAX_STEP_CHARS {
                return Err(Error::invalid(
                    "workflow name",
                    format!("must be 1 to {MAX_STEP_CHARS} characters"),
                ));
            }
        }
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(self.steps.len());
        for (i, step) in self.steps.iter().enumerate() {
            validate_step_name(&step.name)?;
            if index.insert(step.name.as_str(), i).is_some() {
                return Err(Error::invalid(
                    "step",
                    format!("\"{}\" is named twice; step names are unique", step.name),
                ));
            }
        }
        for step in &self.steps {
            let mut seen = HashSet::new();
            for dep in &step.deps {
                if dep.step == step.name {
                    return Err(Error::invalid(
                        "depends_on",
                        format!("step \"{}\" depends on itself", step.name),
                    ));
                }
                if !index.contains_key(dep.step.as_str()) {
                    return Err(Error::invalid(
                        "depends_on",
                        format!(
                            "step \"{}\" depends on \"{}\", which is not a step of the workflow",
                            step.name, dep.step
                        ),
                    ));
                }
                if !seen.insert(dep.step.as_str()) {
                    return Err(Error::invalid(
                        "depends_on",
                        format!(
                            "step \"{}\" names \"{}\" twice among its dependencies",
                            step.name, dep.step
                        ),
                    ));
                }
            }
            if step.job.dedup_key.is_some() {
                return Err(Error::invalid(
                    "dedup_key",
                    format!(
                        "step \"{}\": a job of a workflow cannot have a dedup key (give the workflow an id with with_id to make its push idempotent)",
                        step.name
                    ),
                ));
            }
            if step.job.unique.is_some() {
                return Err(Error::invalid(
                    "unique",
                    format!(
                        "step \"{}\": a job of a workflow cannot be unique (give the workflow an id with with_id to make its push idempotent)",
                        step.name
                    ),
                ));
            }
            step.job.validate_at(limits, now)?;
        }
        if let Some(cycle) = find_cycle(&self.steps, &index) {
            return Err(Error::invalid(
                "depends_on",
                format!("the dependencies form a cycle: {}", cycle.join(" -> ")),
            ));
        }
        Ok(())
    }
}

/// Most characters in a step name (and a workflow's name).
pub const MAX_STEP_CHARS: usize = 200;

/// Checks a step name: 1 to [`MAX_STEP_CHARS`] characters, no control characters.
///
/// # Errors
/// [`Error::InvalidInput`] naming `step`.
pub fn validate_step_name(name: &str) -> Result<()> {
    if name.is_empty() || name.chars().count() > MAX_STEP_CHARS {
        return Err(Error::invalid(
            "step",
            format!("names must be 1 to {MAX_STEP_CHARS} characters"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::invalid(
            "step",
            format!("\"{}\" contains a control character", name.escape_debug()),
        ));
    }
    Ok(())
}

/// A cycle among the steps' dependencies, as the names along it (first name repeated at the
/// end), or `None`.
fn find_cycle(steps: &[Step], index: &HashMap<&str, usize>) -> Option<Vec<String>> {
    // Iterative depth-first search: 0 unvisited, 1 on the current path, 2 done.
    let mut mark = vec![0u8; steps.len()];
    for start in 0..steps.len() {
        if mark[start] != 0 {
            continue;
        }
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        mark[start] = 1;
        while let Some(&mut (node, ref mut next)) = path.last_mut() {
            if let Some(dep) = steps[node].deps.get(*next) {
                *next += 1;
                let d = index[dep.step.as_str()];
                match mark[d] {
                    0 => {
                        mark[d] = 1;
                        path.push((d, 0));
                    }
                    1 => {
                        let from = path.iter().position(|&(n, _)| n == d).unwrap_or(0);
                        let mut names: Vec<String> = path[from..]
                            .iter()
                            .map(|&(n, _)| steps[n].name.clone())
                            .collect();
                        names.push(steps[d].name.clone());
                        // Dependencies point backwards in time: show the order of running.
                        names.reverse();
                        return Some(names);
                    }
                    _ => {}
                }
            } else {
                mark[node] = 2;
                path.pop();
            }
        }
    }
    None
}

/// What [`Queue::push_workflow`](crate::Queue::push_workflow) stored: the workflow's id and
/// each step's job id, in the order the steps were added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushedWorkflow {
    /// The workflow.
    pub id: WorkflowId,
    /// `(step, job id)` of every step.
    pub jobs: Vec<(String, JobId)>,
}

impl PushedWorkflow {
    /// The job id of step `step`.
    pub fn job(&self, step: &str) -> Option<JobId> {
        self.jobs.iter().find(|(s, _)| s == step).map(|(_, id)| *id)
    }
}

/// A dependency of a job as stored, with what its job is now: read by
/// [`Queue::dependencies`](crate::Queue::dependencies) and shown by `get`.
#[derive(Clone, Debug)]
pub struct Dependency {
    /// The job depended on.
    pub id: JobId,
    /// Its step name.
    pub step: String,
    /// What is needed of it.
    pub policy: DepPolicy,
    /// Its state; `None` when the job was deleted (a deleted dependency holds nothing back).
    pub state: Option<JobState>,
    /// What its handler recorded when it completed, if anything.
    pub output: Option<Box<RawValue>>,
}

impl Dependency {
    /// Deserializes the recorded output; `None` when it recorded none.
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

/// How the members of a batch (the dependencies of its callback) ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BatchCounts {
    /// Completed.
    pub completed: u64,
    /// Dead.
    pub dead: u64,
    /// Cancelled.
    pub cancelled: u64,
    /// Not finished (only when read before the callback was due) or deleted.
    pub other: u64,
}

impl BatchCounts {
    /// The counts of `deps`.
    pub fn of(deps: &[Dependency]) -> Self {
        let mut c = BatchCounts::default();
        for d in deps {
            match d.state {
                Some(JobState::Completed) => c.completed += 1,
                Some(JobState::Dead) => c.dead += 1,
                Some(JobState::Cancelled) => c.cancelled += 1,
                _ => c.other += 1,
            }
        }
        c
    }

    /// All members.
    pub fn total(&self) -> u64 {
        self.completed + self.dead + self.cancelled + self.other
    }
}

/// A stored workflow: its row and its jobs.
#[derive(Clone, Debug)]
pub struct WorkflowInfo {
    /// Its id.
    pub id: WorkflowId,
    /// Its name, if it was given one.
    pub name: Option<String>,
    /// An open batch (takes more members until sealed).
    pub open: bool,
    /// A batch's callback job.
    pub callback: Option<JobId>,
    /// When it was pushed (database clock).
    pub created_at: DateTime<Utc>,
    /// Its jobs, in push order, each with its step and what it depends on.
    pub jobs: Vec<WorkflowJob>,
}

impl WorkflowInfo {
    /// How many of its jobs are in each state (states without jobs left out).
    pub fn counts(&self) -> Vec<(JobState, u64)> {
        count_states(self.jobs.iter().map(|j| j.job.state))
    }

    /// Whether every job of it is finished (and it is not an open batch).
    pub fn is_finished(&self) -> bool {
        !self.open && self.jobs.iter().all(|j| j.job.state.is_finished())
    }
}

/// One job of a stored workflow.
#[derive(Clone, Debug)]
pub struct WorkflowJob {
    /// Its step name.
    pub step: String,
    /// The job (as `list` returns it: no history, no output).
    pub job: Job,
    /// The jobs it depends on, with what it needs of each.
    pub depends_on: Vec<(JobId, DepPolicy)>,
}

/// A workflow in a list: its row and how many of its jobs are in each state.
#[derive(Clone, Debug)]
pub struct WorkflowSummary {
    /// Its id.
    pub id: WorkflowId,
    /// Its name.
    pub name: Option<String>,
    /// An open batch.
    pub open: bool,
    /// When it was pushed.
    pub created_at: DateTime<Utc>,
    /// Jobs per state (states without jobs left out).
    pub counts: Vec<(JobState, u64)>,
}

impl WorkflowSummary {
    /// All its jobs.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum()
    }

    /// Whether every job is finished (and it is not an open batch).
    pub fn is_finished(&self) -> bool {
        !self.open && self.counts.iter().all(|(s, n)| *n == 0 || s.is_finished())
    }
}

/// Counts per state, in lifecycle order, states without jobs left out.
pub fn count_states(states: impl Iterator<Item = JobState>) -> Vec<(JobState, u64)> {
    let mut counts: Vec<(JobState, u64)> = JobState::ALL.iter().map(|s| (*s, 0)).collect();
    for s in states {
        if let Some(c) = counts.iter_mut().find(|(x, _)| *x == s) {
            c.1 += 1;
        }
    }
    counts.retain(|(_, n)| *n > 0);
    counts
}

/// Which workflows [`Queue::workflows`](crate::Queue::workflows) lists: newest first.
#[derive(Clone, Copy, Debug)]
pub struct WorkflowListRequest {
    /// Only workflows older than this one (the next page).
    pub before: Option<WorkflowId>,
    /// Most workflows (1 to 1,000).
    pub limit: usize,
}

impl Default for WorkflowListRequest {
    fn default() -> Self {
        WorkflowListRequest {
            before: None,
            limit: 50,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::Limits;

    fn job() -> NewJob {
        NewJob::new("q", &1).unwrap()
    }

    fn check(wf: &Workflow) -> Result<()> {
        wf.validate_at(&Limits::default(), Utc::now())
    }

    fn message(wf: &Workflow) -> String {
        check(wf).unwrap_err().to_string()
    }

    #[test]
    fn a_diamond_is_valid() {
        let wf = Workflow::new()
            .add("a", job())
            .add_after("b", job(), ["a"])
            .add_after("c", job(), ["a"])
            .add_after("d", job(), [Dep::on("b"), Dep::on("c").run_anyway()]);
        check(&wf).unwrap();
    }

    #[test]
    fn bad_graphs_are_refused_naming_the_rule() {
        assert!(message(&Workflow::new()).contains("at least one step"));
        let m = message(&Workflow::new().add("a", job()).add("a", job()));
        assert!(m.contains("named twice"), "{m}");
        let m = message(&Workflow::new().add_after("a", job(), ["a"]));
        assert!(m.contains("depends on itself"), "{m}");
        let m = message(&Workflow::new().add_after("a", job(), ["zz"]));
        assert!(m.contains("\"zz\", which is not a step"), "{m}");
        let m = message(
            &Workflow::new()
                .add_after("a", job(), ["c"])
                .add_after("b", job(), ["a"])
                .add_after("c", job(), ["b"]),
        );
        assert!(m.contains("cycle"), "{m}");
        assert!(m.contains("a -> b -> c -> a") || m.contains("->"), "{m}");
        let m = message(&Workflow::new().add("", job()));
        assert!(m.contains("step"), "{m}");
        let m = message(&Workflow::new().add("a", job().dedup_key("k")));
        assert!(m.contains("dedup_key"), "{m}");
        let m = message(
            &Workflow::new()
                .add_after("a", job(), ["b", "b"])
                .add("b", job()),
        );
        assert!(m.contains("twice"), "{m}");
    }

    #[test]
    fn a_long_chain_has_no_cycle_and_a_ring_has_one() {
        let wf = Workflow::chain((0..5_000).map(|_| job()));
        check(&wf).unwrap();
        assert_eq!(wf.steps()[1].deps(), &[Dep::on("1")]);
        let ring = Workflow::new()
            .add_after("x", job(), ["y"])
            .add_after("y", job(), ["x"]);
        assert!(message(&ring).contains("cycle"));
    }

    #[test]
    fn a_batch_waits_for_every_member_whatever_its_outcome() {
        let wf = Workflow::batch((0..3).map(|_| job()), job());
        check(&wf).unwrap();
        let cb = wf.steps().last().unwrap();
        assert_eq!(cb.name(), CALLBACK_STEP);
        assert_eq!(cb.deps().len(), 3);
        assert!(cb
            .deps()
            .iter()
            .all(|d| d.policy() == DepPolicy::AnyOutcome));
    }
}
