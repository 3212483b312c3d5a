//! What a scenario's end state must satisfy, checked in the database and in the run logs.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use dbqueue::{DepPolicy, JobId, JobState, Queue, WorkflowId, WorkflowInfo};
use futures::StreamExt;
use serde::Serialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::child::{Plan, StartClock};
use crate::db::Db;
use crate::runlog::{Ended, Event, What};

/// The message the rescuer records on a job whose lease expired.
const LEASE_EXPIRED: &str = "lease expired";

/// A pushed job and what it was told to do.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pushed {
    pub(crate) id: JobId,
    pub(crate) plan: Plan,
    pub(crate) max_attempts: u32,
}

/// The counts a scenario reports; every field named as a violation must be 0.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Verdict {
    pub(crate) jobs: u64,
    pub(crate) completed: u64,
    pub(crate) dead: u64,
    /// Executions started (handler starts in the run logs).
    pub(crate) executions: u64,
    /// Claims that followed an attempt which ended without an outcome its handler decided
    /// (holder killed, paused, cut off, or its completion refused).
    pub(crate) redeliveries: u64,
    /// Jobs that went dead because every attempt was cut short (none are expected).
    pub(crate) exhausted: u64,
    /// Executions whose handler started after its lease had expired.
    pub(crate) started_expired: u64,
    /// Violation: effects beyond one per completed job, or effects of jobs that did not
    /// complete.
    pub(crate) duplicate_effects: u64,
    /// Violation: pushed jobs missing from the table, or completed without their effect.
    pub(crate) lost: u64,
    /// Violation: jobs not finished at the end, or running with a lease expired for longer
    /// than the rescue bound while the scenario ran.
    pub(crate) stuck: u64,
    /// Violation: two executions of one job overlapping while both leases were live, or one
    /// lease token delivered twice.
    pub(crate) overlaps: u64,
    /// Violation: a final state the plan does not explain (e.g. a job meant to succeed dead
    /// for a reason other than expired leases).
    pub(crate) unexplained: u64,
    /// Violation: jobs cancelled at the end. Only the workflows scenario cancels jobs (its
    /// operator), and it retries every job it cancelled; the steps a cancel cancelled in turn
    /// must come back with the retry of the job that cancelled them.
    pub(crate) left_cancelled: u64,
    /// Violation: workflows retention deleted while a job of them had not completed, or sooner
    /// after their last job finished than the completed state's age; and jobs the operator
    /// cancelled that were gone (deleted with their workflow) before its retry.
    pub(crate) early_deletions: u64,
    /// Jobs retention deleted with their workflows (each checked by its effect, its row gone).
    pub(crate) deleted: u64,
    /// Violation: starts of a workflow job (any attempt, on the database's clock) before one
    /// of its dependencies had finished as it needs it: completed (its `finished_at`), or, for
    /// a batch's callback, finished whatever the outcome (completed, or cancelled by the
    /// operator until its retry) at one moment since the callback's own last retry.
    pub(crate) early_starts: u64,
    /// The first few violations, in words.
    pub(crate) details: Vec<String>,
}

impl Verdict {
    pub(crate) fn violations(&self) -> u64 {
        self.duplicate_effects
            + self.lost
            + self.stuck
            + self.overlaps
            + self.unexplained
            + self.early_starts
            + self.left_cancelled
            + self.early_deletions
    }

    pub(crate) fn note(&mut self, detail: String) {
        if self.details.len() < 10 {
            self.details.push(detail);
        }
    }
}

/// One execution, assembled from its run-log lines.
#[derive(Debug)]
struct Execution {
    start: i64,
    /// The lease's expiry when the handler started.
    first_exp: i64,
    /// The latest lease expiry the handler knew.
    exp: i64,
    end: Option<(i64, Option<Ended>)>,
    starts: u32,
}

impl Execution {
    /// Until when this execution held a live lease (as far as its log shows).
    fn live_until(&self) -> i64 {
        match self.end {
            Some((t, _)) => t.min(self.exp),
            None => self.exp,
        }
    }
}

/// Checks the final state of `pushed` in the database and the overlaps in `events`. With the
/// workflows scenario's operator (`ops`), the jobs retention deleted are checked by their
/// effects, and an execution's lease counts as live only until the operator's cancel of its
/// job returned (its handler may run on, but every transition it tries is refused).
pub(crate) async fn verify(
    db: &Db,
    queue: &Arc<dyn Queue>,
    ns: &str,
    pushed: &[Pushed],
    events: &[Event],
    overdue_stuck: u64,
    ops: Option<&OperatorLog>,
) -> anyhow::Result<Verdict> {
    let mut v = Verdict {
        jobs: pushed.len() as u64,
        stuck: overdue_stuck,
        ..Verdict::default()
    };
    if overdue_stuck > 0 {
        v.note(format!(
            "{overdue_stuck} job(s) stayed running past their lease plus the rescue bound"
        ));
    }
    let rows: Vec<(JobId, dbqueue::Result<Option<dbqueue::Job>>)> =
        futures::stream::iter(pushed.iter().map(|p| p.id))
            .map(|id| {
                let q = queue.clone();
                async move { (id, q.get(id).await) }
            })
            .buffer_unordered(16)
            .collect()
            .await;
    let mut jobs = HashMap::new();
    for (id, row) in rows {
        jobs.insert(id, row?);
    }
    let effects = db.effect_counts(ns).await?;

    // Executions per job, keyed by lease token.
    let mut runs: HashMap<Uuid, HashMap<Uuid, Execution>> = HashMap::new();
    for e in events {
        let x = runs
            .entry(e.job)
            .or_default()
            .entry(e.token)
            .or_insert(Execution {
                start: e.t,
                first_exp: e.exp,
                exp: e.exp,
                end: None,
                starts: 0,
            });
        match e.what {
            What::Start => {
                x.starts += 1;
                x.start = x.start.min(e.t);
                x.first_exp = e.exp;
                x.exp = x.exp.max(e.exp);
            }
            What::Extend => x.exp = x.exp.max(e.exp),
            What::End => {
                x.exp = x.exp.max(e.exp);
                x.end = Some((e.t, e.outcome));
            }
        }
    }

    let mut pushed_ids = std::collections::HashSet::new();
    for p in pushed {
        pushed_ids.insert(p.id.to_string());
        let n_effects = effects.get(&p.id.to_string()).copied().unwrap_or(0);
        let Some(job) = jobs.get(&p.id).cloned().flatten() else {
            if ops.is_some_and(|o| o.deleted_jobs.contains(&p.id)) {
                // Whether it completed first is verify_workflows' check, by its effect.
                v.deleted += 1;
                if n_effects > 0 {
                    v.completed += 1;
                }
                if n_effects > 1 {
                    v.duplicate_effects += (n_effects - 1) as u64;
                    v.note(format!("deleted job {} has {n_effects} effects", p.id));
                }
                continue;
            }
            v.lost += 1;
            v.note(format!("job {} is missing from the table", p.id));
            continue;
        };
        let execs = runs.get(&p.id.0);
        let decided = execs.map_or(0, |m| {
            m.values()
                .filter(|x| matches!(x.end, Some((_, Some(Ended::Completed | Ended::Failed)))))
                .count() as u64
        });
        let dead_of_leases =
            job.state == JobState::Dead && job.last_error.as_deref() == Some(LEASE_EXPIRED);
        let interrupted = u64::from(job.attempts).saturating_sub(decided);
        v.redeliveries += interrupted.saturating_sub(u64::from(dead_of_leases));
        match job.state {
            JobState::Completed => {
                v.completed += 1;
                if n_effects == 0 {
                    v.lost += 1;
                    v.note(format!("job {} completed without its effect", p.id));
                } else if n_effects > 1 {
                    v.duplicate_effects += (n_effects - 1) as u64;
                    v.note(format!("job {} has {n_effects} effects", p.id));
                }
                if p.plan.permanent || p.plan.fail >= p.max_attempts {
                    v.unexplained += 1;
                    v.note(format!(
                        "job {} completed although every attempt fails",
                        p.id
                    ));
                }
            }
            JobState::Dead => {
                v.dead += 1;
                if n_effects > 0 {
                    v.duplicate_effects += n_effects as u64;
                    v.note(format!("dead job {} has {n_effects} effect(s)", p.id));
                }
                let planned = p.plan.permanent || p.plan.fail >= p.max_attempts;
                if !planned {
                    if dead_of_leases {
                        v.exhausted += 1;
                    } else {
                        v.unexplained += 1;
                        v.note(format!(
                            "job {} is dead ({:?}) although its plan succeeds",
                            p.id, job.last_error
                        ));
                    }
                }
            }
            JobState::Waiting | JobState::Pending | JobState::Running => {
                v.stuck += 1;
                v.note(format!("job {} is still {} at the end", p.id, job.state));
            }
            JobState::Cancelled => {
                v.left_cancelled += 1;
                v.note(format!(
                    "job {} is still cancelled at the end (blocked by {:?})",
                    p.id, job.blocked_by
                ));
            }
        }
        if let Some(execs) = execs {
            v.executions += execs.values().map(|x| u64::from(x.starts)).sum::<u64>();
            if let Some((token, _)) = execs.iter().find(|(_, x)| x.starts > 1) {
                v.overlaps += 1;
                v.note(format!("job {}: lease token {token} started twice", p.id));
            }
            // Two executions overlap when both ran while holding a live lease at one moment. The
            // operator's cancel of the job revokes the lease it had given out.
            let live_until = |x: &Execution| {
                let revoked = ops.and_then(|o| o.revoked_at(p.id, x.first_exp - o.lease_us));
                revoked.map_or(x.live_until(), |r| x.live_until().min(r))
            };
            let mut sorted: Vec<&Execution> = execs.values().collect();
            sorted.sort_by_key(|x| x.start);
            for (i, later) in sorted.iter().enumerate().skip(1) {
                if let Some(earlier) = sorted[..i].iter().find(|earlier| {
                    later.start < live_until(earlier) && later.start < live_until(later)
                }) {
                    v.overlaps += 1;
                    v.note(format!(
                        "job {}: two executions held a live lease at once, for {} µs",
                        p.id,
                        live_until(earlier).min(live_until(later)) - later.start
                    ));
                }
            }
            // Handlers that started on a lease that had already expired (no overlap: the
            // lease was dead; the work was wasted and its completion refused).
            v.started_expired += execs.values().filter(|x| x.exp <= x.start).count() as u64;
        }
    }
    for (job, n) in &effects {
        if !pushed_ids.contains(job) {
            v.duplicate_effects += *n as u64;
            v.note(format!("effect of a job that was never pushed: {job}"));
        }
    }
    Ok(v)
}

/// A workflow as the scenario pushed it.
#[derive(Clone, Debug)]
pub(crate) struct PushedFlow {
    pub(crate) id: WorkflowId,
    /// What it is (`diamond`, `fan-in`, `batch`, `chain`), for the details.
    pub(crate) shape: &'static str,
    /// `(step, job)` of every step.
    pub(crate) jobs: Vec<(String, JobId)>,
    /// `(job, dependency, policy)`: every edge as built.
    pub(crate) edges: Vec<(JobId, JobId, DepPolicy)>,
}

/// One action of the workflows scenario's operator on one job: the database's clock just
/// before the call and just after it returned, and the host's clock (the run logs') after it
/// returned, in microseconds since the epoch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Action {
    pub(crate) job: JobId,
    pub(crate) before: i64,
    pub(crate) after: i64,
    pub(crate) after_host: i64,
}

/// A retention round of the operator that deleted workflows, on the database's clock:
/// `listed` just before the listing of the workflows that preceded it (the operator read then
/// every workflow listed with all its jobs completed), `ended` just after the round returned.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Round {
    pub(crate) listed: i64,
    pub(crate) ended: i64,
}

/// What the workflows scenario's operator did, counted.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct OperatorStats {
    /// Cancels that took, and of those, of jobs listed pending, waiting and running.
    pub(crate) cancels: u64,
    pub(crate) cancelled_pending: u64,
    pub(crate) cancelled_waiting: u64,
    pub(crate) cancelled_running: u64,
    /// Cancels refused because the job had finished since it was listed.
    pub(crate) cancels_refused: u64,
    /// Retries of one job that took.
    pub(crate) retries: u64,
    /// Retries of one job refused with `Error::DependencyFailed` (a dependency it needs
    /// completed was cancelled); each is tried again later.
    pub(crate) retries_refused: u64,
    /// Bulk retries of the queue's cancelled jobs, and the jobs they brought back and skipped.
    pub(crate) bulk_retries: u64,
    pub(crate) bulk_retried: u64,
    pub(crate) bulk_skipped: u64,
    /// Retention rounds run, and those refused because another round's lease held.
    pub(crate) retention_rounds: u64,
    pub(crate) retention_refused: u64,
    /// Workflows retention deleted, and their jobs.
    pub(crate) workflows_deleted: u64,
    pub(crate) workflow_jobs_deleted: u64,
    /// The longest time from the listing before a round to the round's end, in ms.
    pub(crate) longest_round_ms: u64,
    /// Calls that failed on a database error (tried again later).
    pub(crate) errors: u64,
}

/// What the workflows scenario's operator did, for the verifier.
#[derive(Clone, Debug, Default)]
pub(crate) struct OperatorLog {
    /// Every cancel that took.
    pub(crate) cancels: Vec<Action>,
    /// Every retry that brought back a job the operator had cancelled: its own retry of the
    /// job, or a bulk retry after which the job was no longer cancelled (with the bulk call's
    /// clocks).
    pub(crate) retries: Vec<Action>,
    /// The age of retention's rule for completed jobs, in microseconds.
    pub(crate) completed_age_us: i64,
    /// The workers' lease, in microseconds.
    pub(crate) lease_us: i64,
    /// Workflows as read before a retention round, once every job of them had completed: a
    /// completed job never changes again, so this is how each was when deleted.
    pub(crate) captured: HashMap<WorkflowId, WorkflowInfo>,
    /// Workflows listed with every job completed whose read failed.
    pub(crate) complete_unread: HashSet<WorkflowId>,
    /// Workflows retention deleted, each with the round that deleted it.
    pub(crate) deleted: HashMap<WorkflowId, Round>,
    /// The jobs of those workflows.
    pub(crate) deleted_jobs: HashSet<JobId>,
    /// What the operator saw that the rules do not explain: a retry refused for a dependency
    /// that had not failed, a job it cancelled found back without a retry, a job it listed
    /// unfinished gone.
    pub(crate) unexplained: Vec<String>,
    /// Jobs it cancelled that were gone before its retry: deleted, with their workflow, while
    /// a retry could still revive them.
    pub(crate) gone: Vec<String>,
    pub(crate) stats: OperatorStats,
}

impl OperatorLog {
    /// When the operator revoked a lease of `job` given out at `granted` (its expiry when its
    /// handler started, less the lease: the claim's clock, or the clock of the extension a
    /// worker makes before starting a job that waited): when its first cancel of the job that
    /// returned after that returned (host clock). A cancel that revoked the lease committed
    /// after the claim, so it returned after `granted`; one that returned before it was
    /// followed by a retry before the claim, and revoked an earlier lease. The handler may
    /// start after the cancel: its worker claimed the job before it.
    fn revoked_at(&self, job: JobId, granted: i64) -> Option<i64> {
        self.cancels
            .iter()
            .filter(|c| c.job == job && c.after_host >= granted)
            .map(|c| c.after_host)
            .min()
    }

    /// The periods, on the database's clock, in which `job` was cancelled by the operator:
    /// from just before each cancel to just after the retry that followed it (open when none
    /// did).
    fn cancelled_periods(&self, job: JobId) -> Vec<(i64, i64)> {
        self.cancels
            .iter()
            .filter(|c| c.job == job)
            .map(|c| {
                let end = self
                    .retries
                    .iter()
                    .filter(|r| r.job == job && r.before >= c.before)
                    .map(|r| r.after)
                    .min()
                    .unwrap_or(i64::MAX);
                (c.before, end)
            })
            .collect()
    }

    /// When the latest retry of `job` that began by `t` began (database clock).
    fn retried_by(&self, job: JobId, t: i64) -> Option<i64> {
        self.retries
            .iter()
            .filter(|r| r.job == job && r.before <= t)
            .map(|r| r.before)
            .max()
    }
}

/// What the workflows scenario measured of its workflows.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct FlowStats {
    /// Workflows pushed.
    pub(crate) workflows: u64,
    pub(crate) diamonds: u64,
    /// Fan-ins whose sink needs every member completed.
    pub(crate) fan_ins: u64,
    /// Fan-ins pushed as `Workflow::batch` (the callback runs whatever each member's outcome).
    pub(crate) batches: u64,
    pub(crate) chains: u64,
    /// Workflows with a job that did not complete (its jobs are counted as stuck, dead, left
    /// cancelled or unexplained).
    pub(crate) unfinished: u64,
    /// Jobs with at least one dependency.
    pub(crate) dependents: u64,
    /// Their starts checked against their dependencies' `finished_at` (every attempt's, from
    /// the run logs, and the completing attempt's, from the job's output).
    pub(crate) starts_checked: u64,
    /// The longest and the median time from a dependent's last dependency finishing to its
    /// first start, on the database's clock.
    pub(crate) max_wait_ms: u64,
    pub(crate) median_wait_ms: u64,
    /// Waiting jobs the workers' sweep (`settle_waiting`) settled, from their logs.
    pub(crate) swept: u64,
    /// Executions whose completion transaction (effect, completion and the settling of the
    /// dependents) failed on a database error and was rolled back, so the job ran again (or
    /// whose handler could not read the database's clock).
    pub(crate) completion_errors: u64,
    /// Workflows retention deleted (checked by their jobs' effects and as the operator read
    /// them before the round).
    pub(crate) deleted: u64,
    /// Of those, workflows the operator had not read with every job completed before the
    /// round (possible only when the round ended later than the completed age after the
    /// listing before it): their jobs' starts are not checked.
    pub(crate) deleted_unread: u64,
    /// Starts of a batch's callback while a member it had become due without (the member was
    /// cancelled) ran again after its retry: the rules reopen only the steps a failure
    /// cancelled, and a callback is never cancelled by its members. Counted, not failed.
    pub(crate) callback_starts_beside_a_retried_member: u64,
    /// What the operator did (all zero without one).
    pub(crate) operator: OperatorStats,
}

/// Checks a workflow that retention deleted: every job of it had completed (each has its
/// effect: the effect commits with the completion, and a deleted job's completion is refused,
/// so an effect proves a completion before the deletion; a completed job never changes
/// again), and the round came the completed state's age or more after the last of them
/// finished, as the operator read them before the round. Returns the workflow as it was read
/// then, when it was (else its starts cannot be checked).
fn deleted_workflow(
    f: &PushedFlow,
    round: Round,
    ops: &OperatorLog,
    effects: &HashMap<String, i64>,
    v: &mut Verdict,
) -> Option<WorkflowInfo> {
    let age_ms = ops.completed_age_us / 1000;
    let incomplete: Vec<&str> = f
        .jobs
        .iter()
        .filter(|(_, id)| effects.get(&id.to_string()).copied().unwrap_or(0) == 0)
        .map(|(step, _)| step.as_str())
        .collect();
    if !incomplete.is_empty() {
        v.early_deletions += 1;
        v.note(format!(
            "{} workflow {} was deleted by retention although step(s) {} never completed",
            f.shape,
            f.id,
            incomplete.join(", ")
        ));
        return ops.captured.get(&f.id).cloned();
    }
    match ops.captured.get(&f.id) {
        Some(info) => {
            let last = info
                .jobs
                .iter()
                .filter_map(|j| j.job.finished_at)
                .map(|t| t.timestamp_micros())
                .max();
            if let Some(last) = last.filter(|l| *l > round.ended - ops.completed_age_us) {
                v.early_deletions += 1;
                v.note(format!(
                    "{} workflow {} was deleted by a round that ended {} ms after its last job finished; completed jobs go after {age_ms} ms",
                    f.shape,
                    f.id,
                    (round.ended - last) / 1000
                ));
            }
            Some(info.clone())
        }
        None if ops.complete_unread.contains(&f.id) => None,
        // Not listed with every job completed just before the round: a job of it finished
        // after `listed`, so a round that ended less than the age later deleted it too young.
        None if round.ended - round.listed < ops.completed_age_us => {
            v.early_deletions += 1;
            v.note(format!(
                "{} workflow {} was deleted by a round that ended {} ms after a listing that showed a job of it not completed; completed jobs go after {age_ms} ms",
                f.shape,
                f.id,
                (round.ended - round.listed) / 1000
            ));
            None
        }
        None => None,
    }
}

/// Checks the workflows: each stored as built and finished with every job completed (or, when
/// retention deleted it, completed before that; see `deleted_workflow`), and no job started
/// (on the database's clock) before its dependencies had finished as it needs them, across
/// the operator's cancels and retries.
///
/// Retention deletes workflows during the run, so their rows cannot be read at the end. The
/// operator therefore reads every workflow once it is listed with all its jobs completed, just
/// before each round, and the verifier takes their finishes from that read: a completed job
/// never changes again, so it is exact, and it costs a read per workflow, not per job or per
/// round. A workflow a round deleted without that read had a job that finished after the
/// listing, which the round's own clocks prove too young unless the round took longer than the
/// age; only then are its starts left unchecked (counted). Recording each finish from the
/// workers instead would miss the ones a SIGKILL cuts off between the commit and the log line,
/// and ages long enough to outlast the verification would delete nothing while the workers run.
pub(crate) async fn verify_workflows(
    queue: &Arc<dyn Queue>,
    flows: &[PushedFlow],
    events: &[Event],
    ops: &OperatorLog,
    effects: &HashMap<String, i64>,
    v: &mut Verdict,
) -> anyhow::Result<FlowStats> {
    let mut stats = FlowStats {
        workflows: flows.len() as u64,
        operator: ops.stats.clone(),
        ..FlowStats::default()
    };
    for note in &ops.unexplained {
        v.unexplained += 1;
        v.note(note.clone());
    }
    for note in &ops.gone {
        v.early_deletions += 1;
        v.note(note.clone());
    }
    for f in flows {
        match f.shape {
            "diamond" => stats.diamonds += 1,
            "fan-in" => stats.fan_ins += 1,
            "batch" => stats.batches += 1,
            _ => stats.chains += 1,
        }
    }
    let infos: Vec<(usize, dbqueue::Result<Option<WorkflowInfo>>)> =
        futures::stream::iter(flows.iter().enumerate())
            .map(|(i, f)| {
                let q = queue.clone();
                async move { (i, q.workflow(f.id).await) }
            })
            .buffer_unordered(8)
            .collect()
            .await;
    // Every job of every workflow as stored (or as read before its deletion), and the steps'
    // names.
    let mut stored: HashMap<JobId, dbqueue::Job> = HashMap::new();
    let mut steps: HashMap<JobId, String> = HashMap::new();
    // The jobs of deleted workflows that were not read before their deletion.
    let mut unread: HashSet<JobId> = HashSet::new();
    for (i, info) in infos {
        let f = &flows[i];
        for (step, id) in &f.jobs {
            steps.insert(*id, step.clone());
        }
        let info = match (info?, ops.deleted.get(&f.id)) {
            (Some(info), _) => info,
            (None, Some(round)) => {
                stats.deleted += 1;
                match deleted_workflow(f, *round, ops, effects, v) {
                    Some(info) => info,
                    None => {
                        stats.deleted_unread += 1;
                        unread.extend(f.jobs.iter().map(|(_, id)| *id));
                        continue;
                    }
                }
            }
            (None, None) => {
                v.lost += 1;
                v.note(format!("{} workflow {} is missing", f.shape, f.id));
                continue;
            }
        };
        let built: HashSet<(JobId, JobId, DepPolicy)> = f.edges.iter().copied().collect();
        let kept: HashSet<(JobId, JobId, DepPolicy)> = info
            .jobs
            .iter()
            .flat_map(|j| j.depends_on.iter().map(|(d, p)| (j.job.id, *d, *p)))
            .collect();
        let built_jobs: HashSet<JobId> = f.jobs.iter().map(|(_, id)| *id).collect();
        let kept_jobs: HashSet<JobId> = info.jobs.iter().map(|j| j.job.id).collect();
        if built != kept || built_jobs != kept_jobs {
            v.unexplained += 1;
            v.note(format!(
                "{} workflow {} is stored with {} jobs and {} dependencies; it was pushed with {} and {}",
                f.shape,
                f.id,
                kept_jobs.len(),
                kept.len(),
                built_jobs.len(),
                built.len()
            ));
        }
        if !info.is_finished() || info.jobs.iter().any(|j| j.job.state != JobState::Completed) {
            stats.unfinished += 1;
            let counts: Vec<String> = info
                .counts()
                .iter()
                .map(|(s, n)| format!("{s} {n}"))
                .collect();
            v.note(format!(
                "{} workflow {} did not finish with every job completed: {}",
                f.shape,
                f.id,
                counts.join(", ")
            ));
            // What each job left waiting waits for, and what cancelled each job left
            // cancelled.
            let states: HashMap<JobId, &dbqueue::Job> =
                info.jobs.iter().map(|j| (j.job.id, &j.job)).collect();
            let describe = |d: &JobId| {
                let step = steps.get(d).map_or("?", String::as_str);
                let state = states.get(d).map_or("gone".to_owned(), |x| {
                    format!("{} (finished {:?})", x.state, x.finished_at)
                });
                format!("{step}: {state}")
            };
            for j in &info.jobs {
                match j.job.state {
                    JobState::Waiting => {
                        let deps: Vec<String> =
                            j.depends_on.iter().map(|(d, _)| describe(d)).collect();
                        v.note(format!(
                            "  job {} (step {}) still waits for {}",
                            j.job.id,
                            j.step,
                            deps.join("; ")
                        ));
                    }
                    JobState::Cancelled => v.note(format!(
                        "  job {} (step {}) is still cancelled, blocked by {}",
                        j.job.id,
                        j.step,
                        j.job
                            .blocked_by
                            .map_or("none (the operator cancelled it)".to_owned(), |b| describe(
                                &b
                            ))
                    )),
                    _ => {}
                }
            }
        }
        for j in info.jobs {
            stored.insert(j.job.id, j.job);
        }
    }

    // Every start of every job on the database's clock: each attempt's from the run logs, and
    // the completing attempt's as its handler stored it in the job's output.
    let mut starts: HashMap<Uuid, Vec<(u32, i64)>> = HashMap::new();
    for e in events {
        if let (What::Start, Some(t)) = (e.what, e.db_t) {
            starts.entry(e.job).or_default().push((e.attempt, t));
        }
        if e.what == What::End && e.outcome == Some(Ended::Error) {
            stats.completion_errors += 1;
        }
    }
    let deps_of: HashMap<JobId, Vec<(JobId, DepPolicy)>> = flows
        .iter()
        .flat_map(|f| f.edges.iter())
        .fold(HashMap::new(), |mut m, (job, dep, policy)| {
            m.entry(*job).or_insert_with(Vec::new).push((*dep, *policy));
            m
        });
    let outputs: Vec<(JobId, dbqueue::Result<Option<dbqueue::Job>>)> = futures::stream::iter(
        deps_of
            .keys()
            .copied()
            .filter(|id| !ops.deleted_jobs.contains(id)),
    )
    .map(|id| {
        let q = queue.clone();
        async move { (id, q.get(id).await) }
    })
    .buffer_unordered(16)
    .collect()
    .await;
    for (id, job) in outputs {
        let Some(job) = job? else { continue };
        if job.state != JobState::Completed {
            continue;
        }
        match job
            .output
            .as_deref()
            .map(|o| serde_json::from_str::<StartClock>(o.get()))
        {
            Some(Ok(c)) => {
                let list = starts.entry(id.0).or_default();
                if !list.contains(&(c.attempt, c.db_start_us)) {
                    list.push((c.attempt, c.db_start_us));
                }
            }
            _ => {
                v.unexplained += 1;
                v.note(format!(
                    "job {id} completed without the start clock its handler stores: {:?}",
                    job.output.as_deref().map(RawValue::get)
                ));
            }
        }
    }
    // A job's final finish (a job left cancelled finished at its cancel), and its completion.
    let finished_at = |d: &JobId| {
        stored
            .get(d)
            .and_then(|x| x.finished_at)
            .map(|t| t.timestamp_micros())
    };
    let completed_at = |d: &JobId| {
        stored
            .get(d)
            .filter(|x| x.state == JobState::Completed)
            .and_then(|x| x.finished_at)
            .map(|t| t.timestamp_micros())
    };
    let step_of = |d: &JobId| steps.get(d).map_or("?", String::as_str).to_owned();
    let mut waits = Vec::new();
    for (job, deps) in &deps_of {
        if unread.contains(job) {
            continue;
        }
        stats.dependents += 1;
        let Some(list) = starts.get(&job.0) else {
            continue;
        };
        // What each dependency run whatever its outcome was finished in: its completion (its
        // final finish, for good) and the periods the operator had it cancelled. (Steps a
        // cancel cancelled in turn are never such dependencies here: a batch's members depend
        // on nothing.)
        let anyway: Vec<(JobId, Vec<(i64, i64)>)> = deps
            .iter()
            .filter(|(_, p)| *p == DepPolicy::AnyOutcome)
            .map(|(d, _)| {
                let mut periods = ops.cancelled_periods(*d);
                if let Some(fin) = finished_at(d) {
                    periods.push((fin, i64::MAX));
                }
                (*d, periods)
            })
            .collect();
        let all_finished_at = |m: i64| {
            anyway
                .iter()
                .all(|(_, p)| p.iter().any(|(from, to)| *from <= m && m <= *to))
        };
        for (attempt, t) in list {
            stats.starts_checked += 1;
            let mut early = Vec::new();
            // A dependency it needs completed completes once and never changes again, and the
            // step becomes pending only after that (a cancel of the dependency cancels it, a
            // retry of it waits again): every start, before or after any retry, comes after
            // the dependency's completion.
            for (d, _) in deps.iter().filter(|(_, p)| *p == DepPolicy::Completed) {
                match completed_at(d) {
                    Some(fin) if *t >= fin => {}
                    Some(fin) => {
                        early.push(format!("{} finished {} µs later", step_of(d), fin - t))
                    }
                    None => early.push(format!("{} never completed", step_of(d))),
                }
            }
            // The dependencies it runs after whatever their outcome all had finished at one
            // moment since its own last retry began (that retry made it wait again), and by
            // this start: that is when it became due.
            if !anyway.is_empty() {
                let since = ops.retried_by(*job, *t).unwrap_or(i64::MIN);
                let candidates = std::iter::once(since).chain(
                    anyway
                        .iter()
                        .flat_map(|(_, p)| p.iter().map(|(from, _)| *from)),
                );
                let became_due = candidates
                    .filter(|m| *m >= since && *m <= *t)
                    .any(all_finished_at);
                if !became_due {
                    let open: Vec<String> = anyway
                        .iter()
                        .filter(|(_, p)| !p.iter().any(|(from, to)| *from <= *t && *t <= *to))
                        .map(|(d, _)| step_of(d))
                        .collect();
                    early.push(if open.is_empty() {
                        "its dependencies had not all finished at one moment since its last retry"
                            .to_owned()
                    } else {
                        format!("{} had not finished", open.join(", "))
                    });
                } else if !all_finished_at(*t) {
                    stats.callback_starts_beside_a_retried_member += 1;
                }
            }
            if !early.is_empty() {
                v.early_starts += 1;
                v.note(format!(
                    "job {job} (step {}) attempt {attempt} started at {t} µs on the database's clock before its dependencies finished: {}",
                    step_of(job),
                    early.join("; ")
                ));
            }
        }
        let last = deps
            .iter()
            .map(|(d, _)| finished_at(d))
            .collect::<Option<Vec<i64>>>();
        let first = list.iter().map(|(_, t)| *t).min();
        if let (Some(last), Some(first)) = (last.and_then(|l| l.into_iter().max()), first) {
            waits.push(first - last);
        }
    }
    waits.sort_unstable();
    stats.max_wait_ms = waits.last().map_or(0, |w| (*w).max(0) as u64 / 1000);
    stats.median_wait_ms = waits
        .get(waits.len() / 2)
        .map_or(0, |w| (*w).max(0) as u64 / 1000);
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use dbqueue::{Error, NewJob, PopRequest, SqliteQueue, Workflow};

    use super::*;
    use crate::runlog::{Ended, Event, What};

    /// The edges of a diamond: b and c after a, d after b and c.
    fn diamond_edges(id: &dyn Fn(&str) -> JobId) -> Vec<(JobId, JobId, DepPolicy)> {
        let c = DepPolicy::Completed;
        vec![
            (id("b"), id("a"), c),
            (id("c"), id("a"), c),
            (id("d"), id("b"), c),
            (id("d"), id("c"), c),
        ]
    }

    fn start(job: JobId, db_t: i64) -> Event {
        Event {
            what: What::Start,
            job: job.0,
            token: Uuid::new_v4(),
            attempt: 1,
            process: "test".into(),
            t: db_t,
            exp: db_t + 1_000_000,
            outcome: None,
            db_t: Some(db_t),
        }
    }

    /// Claims the pending jobs (`expect` of them) and completes each with the start clock `at`,
    /// as a worker's handler would, and logs their starts and ends.
    async fn run(queue: &Arc<dyn Queue>, expect: usize, at: i64) -> Vec<Event> {
        let got = queue
            .pop(
                PopRequest::new("q")
                    .limit(10)
                    .lease(Duration::from_secs(30)),
            )
            .await
            .unwrap();
        assert_eq!(got.len(), expect);
        let mut events = Vec::new();
        for l in got {
            let clock = StartClock {
                db_start_us: at,
                attempt: l.lease.attempt,
            };
            let out = serde_json::value::to_raw_value(&clock).unwrap();
            queue.ack_with_output(&l.lease, &out).await.unwrap();
            let mut e = start(l.lease.job_id, at);
            e.attempt = l.lease.attempt;
            events.push(e);
            let mut end = start(l.lease.job_id, at);
            end.what = What::End;
            end.outcome = Some(Ended::Completed);
            events.push(end);
        }
        events
    }

    /// A diamond run in order passes; a start of `b` logged before `a` finished is one early
    /// start, named in the details.
    #[tokio::test]
    async fn a_dependent_started_before_its_dependency_finished_is_an_early_start() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let q = SqliteQueue::builder(url).connect().await.unwrap();
        q.migrate().await.unwrap();
        let queue: Arc<dyn Queue> = Arc::new(q);
        let job = || NewJob::new("q", &1).unwrap();
        let wf = Workflow::new()
            .add("a", job())
            .add_after("b", job(), ["a"])
            .add_after("c", job(), ["a"])
            .add_after("d", job(), ["b", "c"]);
        let pushed = queue.push_workflow(wf).await.unwrap();
        let id = |s: &str| pushed.job(s).unwrap();
        let flow = PushedFlow {
            id: pushed.id,
            shape: "diamond",
            jobs: pushed.jobs.clone(),
            edges: diamond_edges(&id),
        };
        let before_a = queue.now().await.unwrap().timestamp_micros();
        let mut events = run(&queue, 1, before_a).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        let now = || async { queue.now().await.unwrap().timestamp_micros() };
        events.extend(run(&queue, 2, now().await).await);
        tokio::time::sleep(Duration::from_millis(5)).await;
        events.extend(run(&queue, 1, now().await).await);

        let mut v = Verdict::default();
        let no_ops = OperatorLog::default();
        let none = HashMap::new();
        let stats = verify_workflows(
            &queue,
            std::slice::from_ref(&flow),
            &events,
            &no_ops,
            &none,
            &mut v,
        )
        .await
        .unwrap();
        assert_eq!(v.violations(), 0, "{:?}", v.details);
        assert_eq!(
            (stats.workflows, stats.diamonds, stats.unfinished),
            (1, 1, 0)
        );
        assert_eq!((stats.dependents, stats.starts_checked), (3, 3));

        // An attempt of b that started before a finished.
        let mut early = start(id("b"), before_a);
        early.attempt = 2;
        events.push(early);
        let mut v = Verdict::default();
        verify_workflows(&queue, &[flow], &events, &no_ops, &none, &mut v)
            .await
            .unwrap();
        assert_eq!(v.early_starts, 1, "{:?}", v.details);
        assert!(
            v.details[0].contains("(step b) attempt 2"),
            "{:?}",
            v.details
        );
    }

    /// An SQLite queue with the effects table, as a scenario opens it.
    async fn open(dir: &tempfile::TempDir) -> (Db, Arc<dyn Queue>) {
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let q = SqliteQueue::builder(url).connect().await.unwrap();
        q.migrate().await.unwrap();
        let db = Db::Sqlite(q);
        db.create_effects_table().await.unwrap();
        let queue = db.queue();
        (db, queue)
    }

    async fn db_now(queue: &Arc<dyn Queue>) -> i64 {
        queue.now().await.unwrap().timestamp_micros()
    }

    /// The operator's action `call` on `job`, with its clocks.
    async fn act<F, T>(queue: &Arc<dyn Queue>, job: JobId, call: F) -> (Action, dbqueue::Result<T>)
    where
        F: std::future::Future<Output = dbqueue::Result<T>>,
    {
        let before = db_now(queue).await;
        let r = call.await;
        let after_host = crate::db::now_us();
        let after = db_now(queue).await;
        let a = Action {
            job,
            before,
            after,
            after_host,
        };
        (a, r)
    }

    /// Claims the pending jobs (`expect` of them) and completes each as a worker's handler
    /// does: its start read on the database's clock, its effect and its completion (with the
    /// start clock as output) in one transaction, then its dependents settled.
    async fn work(db: &Db, queue: &Arc<dyn Queue>, expect: usize) -> Vec<Event> {
        tokio::time::sleep(Duration::from_millis(3)).await;
        let got = queue
            .pop(
                PopRequest::new("q")
                    .limit(30)
                    .lease(Duration::from_secs(30)),
            )
            .await
            .unwrap();
        assert_eq!(got.len(), expect);
        let mut events = Vec::new();
        for l in got {
            let at = db_now(queue).await;
            let mut e = start(l.lease.job_id, at);
            e.attempt = l.lease.attempt;
            e.token = l.lease.token;
            e.t = crate::db::now_us();
            e.exp = l.lease.expires_at.timestamp_micros();
            events.push(e.clone());
            let clock = StartClock {
                db_start_us: at,
                attempt: l.lease.attempt,
            };
            let out = serde_json::value::to_raw_value(&clock).unwrap();
            let effect = crate::db::Effect {
                attempt: l.lease.attempt,
                process: "test".into(),
                started_us: e.t,
            };
            db.complete_with_effect("t", &l.lease, &effect, Some(&out), Duration::ZERO, &|_| {})
                .await
                .unwrap();
            queue.settle_dependents(&[l.lease.job_id]).await.unwrap();
            e.what = What::End;
            e.outcome = Some(Ended::Completed);
            e.t = crate::db::now_us();
            events.push(e);
        }
        events
    }

    fn pushed_of(flows: &[&PushedFlow]) -> Vec<Pushed> {
        flows
            .iter()
            .flat_map(|f| f.jobs.iter())
            .map(|(_, id)| Pushed {
                id: *id,
                plan: Plan {
                    seq: 0,
                    fail: 0,
                    permanent: false,
                    work_ms: 0,
                },
                max_attempts: 25,
            })
            .collect()
    }

    async fn state(queue: &Arc<dyn Queue>, id: JobId) -> JobState {
        queue.get(id).await.unwrap().unwrap().state
    }

    /// The operator cancels a diamond's running `a` (b, c and d are cancelled with it; the
    /// handler of `a` runs on), a retry of `b` is refused while `a` is cancelled, then `a` is
    /// retried and everything runs: no violation, and the run of `a` after its retry does not
    /// overlap the cancelled one. A start of `b` after the retry, before `a` finished, is an
    /// early start; a chain whose first link is cancelled and never retried is left cancelled,
    /// all three of its jobs.
    #[tokio::test]
    async fn an_early_start_after_a_retry_and_steps_left_cancelled_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let (db, queue) = open(&dir).await;
        let job = || NewJob::new("q", &1).unwrap();
        let wf = Workflow::new()
            .add("a", job())
            .add_after("b", job(), ["a"])
            .add_after("c", job(), ["a"])
            .add_after("d", job(), ["b", "c"]);
        let pushed = queue.push_workflow(wf).await.unwrap();
        let id = |s: &str| pushed.job(s).unwrap();
        let diamond = PushedFlow {
            id: pushed.id,
            shape: "diamond",
            jobs: pushed.jobs.clone(),
            edges: diamond_edges(&id),
        };
        let mut ops = OperatorLog {
            lease_us: 30_000_000,
            ..OperatorLog::default()
        };
        // `a` runs: its handler logs its start and is never heard of again.
        let held = queue
            .pop(PopRequest::new("q").lease(Duration::from_secs(30)))
            .await
            .unwrap();
        let mut first = start(id("a"), db_now(&queue).await);
        first.token = held[0].lease.token;
        first.t = crate::db::now_us();
        first.exp = held[0].lease.expires_at.timestamp_micros();
        let mut events = vec![first];
        let (cancel, r) = act(&queue, id("a"), queue.cancel(id("a"))).await;
        r.unwrap();
        ops.cancels.push(cancel);
        for s in ["b", "c", "d"] {
            assert_eq!(state(&queue, id(s)).await, JobState::Cancelled, "{s}");
        }
        match queue.retry(id("b")).await {
            Err(Error::DependencyFailed {
                dependency, state, ..
            }) => {
                assert_eq!((dependency, state), (id("a"), Some(JobState::Cancelled)));
            }
            other => panic!("{other:?}"),
        }
        let (retry, r) = act(&queue, id("a"), queue.retry(id("a"))).await;
        r.unwrap();
        ops.retries.push(retry);
        for s in ["b", "c", "d"] {
            assert_eq!(state(&queue, id(s)).await, JobState::Waiting, "{s}");
        }
        events.extend(work(&db, &queue, 1).await);
        events.extend(work(&db, &queue, 2).await);
        events.extend(work(&db, &queue, 1).await);

        let pushed_jobs = pushed_of(&[&diamond]);
        let v = verify(&db, &queue, "t", &pushed_jobs, &events, 0, Some(&ops))
            .await
            .unwrap();
        assert_eq!(v.violations(), 0, "{:?}", v.details);
        assert_eq!(v.completed, 4);
        // Without the operator's cancel, the two runs of `a` would hold live leases at once.
        let v = verify(&db, &queue, "t", &pushed_jobs, &events, 0, None)
            .await
            .unwrap();
        assert_eq!(v.overlaps, 1, "{:?}", v.details);
        // The same when the first run's handler starts only after the cancel (its worker had
        // claimed the job before it): the cancel revoked that lease too.
        let mut late = events.clone();
        late[0].t = cancel.after_host + 10;
        let v = verify(&db, &queue, "t", &pushed_jobs, &late, 0, Some(&ops))
            .await
            .unwrap();
        assert_eq!(v.violations(), 0, "{:?}", v.details);
        let v = verify(&db, &queue, "t", &pushed_jobs, &late, 0, None)
            .await
            .unwrap();
        assert_eq!(v.overlaps, 1, "{:?}", v.details);
        let effects = db.effect_counts("t").await.unwrap();
        let mut v = Verdict::default();
        let flows = [diamond.clone()];
        let stats = verify_workflows(&queue, &flows, &events, &ops, &effects, &mut v)
            .await
            .unwrap();
        assert_eq!(v.violations(), 0, "{:?}", v.details);
        assert_eq!((stats.dependents, stats.starts_checked), (3, 3));

        // A start of `b` after the retry of `a`, before `a` finished.
        let mut early = start(id("b"), retry.after + 1);
        early.attempt = 2;
        events.push(early);
        let mut v = Verdict::default();
        verify_workflows(&queue, &flows, &events, &ops, &effects, &mut v)
            .await
            .unwrap();
        assert_eq!(v.early_starts, 1, "{:?}", v.details);
        assert!(
            v.details[0].contains("(step b) attempt 2") && v.details[0].contains("a finished"),
            "{:?}",
            v.details
        );

        // A chain whose first link is cancelled, and never retried.
        let wf = Workflow::new()
            .then("1", job())
            .then("2", job())
            .then("3", job());
        let pushed = queue.push_workflow(wf).await.unwrap();
        let link = |s: &str| pushed.job(s).unwrap();
        let chain = PushedFlow {
            id: pushed.id,
            shape: "chain",
            jobs: pushed.jobs.clone(),
            edges: vec![
                (link("2"), link("1"), DepPolicy::Completed),
                (link("3"), link("2"), DepPolicy::Completed),
            ],
        };
        let (cancel, r) = act(&queue, link("1"), queue.cancel(link("1"))).await;
        r.unwrap();
        ops.cancels.push(cancel);
        let v = verify(
            &db,
            &queue,
            "t",
            &pushed_of(&[&diamond, &chain]),
            &events,
            0,
            Some(&ops),
        )
        .await
        .unwrap();
        assert_eq!(v.left_cancelled, 3, "{:?}", v.details);
        let mut v = Verdict::default();
        let stats = verify_workflows(&queue, &[chain], &events, &ops, &effects, &mut v)
            .await
            .unwrap();
        assert_eq!(stats.unfinished, 1, "{:?}", v.details);
        assert!(
            v.details
                .iter()
                .any(|d| d.contains("(step 1) is still cancelled, blocked by none")),
            "{:?}",
            v.details
        );
    }

    /// A batch's callback may start once every member finished, a cancelled member counting
    /// as finished until its retry: with member 1 cancelled and member 2 completed it runs,
    /// then member 1 is retried and runs. A start of the callback before the cancel, with
    /// member 2 still pending, is an early start; a start after member 1's retry, while it
    /// runs again, is counted apart.
    #[tokio::test]
    async fn a_callback_may_start_while_a_member_is_cancelled_but_not_before_all_finished() {
        let dir = tempfile::tempdir().unwrap();
        let (db, queue) = open(&dir).await;
        let job = || NewJob::new("q", &1).unwrap();
        let wf = Workflow::batch(vec![job(), job()], job());
        let pushed = queue.push_workflow(wf).await.unwrap();
        let info = queue.workflow(pushed.id).await.unwrap().unwrap();
        let callback = info.callback.unwrap();
        let members: Vec<JobId> = info
            .jobs
            .iter()
            .map(|j| j.job.id)
            .filter(|j| *j != callback)
            .collect();
        let batch = PushedFlow {
            id: pushed.id,
            shape: "batch",
            jobs: pushed.jobs.clone(),
            edges: members
                .iter()
                .map(|m| (callback, *m, DepPolicy::AnyOutcome))
                .collect(),
        };
        let mut ops = OperatorLog::default();
        let before_all = db_now(&queue).await;
        let (cancel, r) = act(&queue, members[0], queue.cancel(members[0])).await;
        r.unwrap();
        ops.cancels.push(cancel);
        let mut events = work(&db, &queue, 1).await;
        // Member 2 completed and member 1 is cancelled: the callback is due.
        events.extend(work(&db, &queue, 1).await);
        let (retry, r) = act(&queue, members[0], queue.retry(members[0])).await;
        r.unwrap();
        ops.retries.push(retry);
        events.extend(work(&db, &queue, 1).await);
        let effects = db.effect_counts("t").await.unwrap();
        let flows = [batch];
        let mut v = Verdict::default();
        let stats = verify_workflows(&queue, &flows, &events, &ops, &effects, &mut v)
            .await
            .unwrap();
        assert_eq!(v.violations(), 0, "{:?}", v.details);
        assert_eq!(
            (
                stats.starts_checked,
                stats.callback_starts_beside_a_retried_member
            ),
            (1, 0)
        );

        let mut early = events.clone();
        early.push(start(callback, before_all));
        let mut v = Verdict::default();
        verify_workflows(&queue, &flows, &early, &ops, &effects, &mut v)
            .await
            .unwrap();
        assert_eq!(v.early_starts, 1, "{:?}", v.details);
        assert!(v.details[0].contains("had not finished"), "{:?}", v.details);

        let mut beside = events.clone();
        beside.push(start(callback, retry.after + 1));
        let mut v = Verdict::default();
        let stats = verify_workflows(&queue, &flows, &beside, &ops, &effects, &mut v)
            .await
            .unwrap();
        assert_eq!(v.violations(), 0, "{:?}", v.details);
        assert_eq!(stats.callback_starts_beside_a_retried_member, 1);
    }

    /// A workflow retention deleted passes when every job of it completed (has its effect) and
    /// the round came the age after its last finish; it is an early deletion when a job never
    /// completed, when the round came sooner, or when it was deleted by a round that ended
    /// sooner than the age after a listing that showed it unfinished. Its starts are checked
    /// as the operator read it before the round.
    #[tokio::test]
    async fn a_workflow_deleted_too_soon_or_unfinished_is_an_early_deletion() {
        let dir = tempfile::tempdir().unwrap();
        let (db, queue) = open(&dir).await;
        let job = || NewJob::new("q", &1).unwrap();
        let wf = Workflow::new()
            .add("a", job())
            .add_after("b", job(), ["a"])
            .add_after("c", job(), ["a"])
            .add_after("d", job(), ["b", "c"]);
        let pushed = queue.push_workflow(wf).await.unwrap();
        let id = |s: &str| pushed.job(s).unwrap();
        let diamond = PushedFlow {
            id: pushed.id,
            shape: "diamond",
            jobs: pushed.jobs.clone(),
            edges: diamond_edges(&id),
        };
        let mut events = work(&db, &queue, 1).await;
        events.extend(work(&db, &queue, 2).await);
        events.extend(work(&db, &queue, 1).await);
        let info = queue.workflow(pushed.id).await.unwrap().unwrap();
        let last = info
            .jobs
            .iter()
            .filter_map(|j| j.job.finished_at)
            .map(|t| t.timestamp_micros())
            .max()
            .unwrap();
        let listed = db_now(&queue).await;
        assert_eq!(
            queue
                .prune(dbqueue::PruneRequest::older_than(Duration::ZERO))
                .await
                .unwrap(),
            4
        );
        assert!(queue.workflow(pushed.id).await.unwrap().is_none());
        let effects = db.effect_counts("t").await.unwrap();
        let age = 1_000_000;
        let deleted_by = |ended: i64| OperatorLog {
            completed_age_us: age,
            deleted: [(pushed.id, Round { listed, ended })].into(),
            deleted_jobs: pushed.jobs.iter().map(|(_, j)| *j).collect(),
            captured: [(pushed.id, info.clone())].into(),
            ..OperatorLog::default()
        };
        let flows = [diamond.clone()];
        let check = |ops: OperatorLog, effects: HashMap<String, i64>| {
            let (queue, events, flows) = (queue.clone(), events.clone(), flows.clone());
            async move {
                let mut v = Verdict::default();
                let stats = verify_workflows(&queue, &flows, &events, &ops, &effects, &mut v)
                    .await
                    .unwrap();
                (v, stats)
            }
        };

        // Deleted the age after its last finish: as it must be.
        let ops = deleted_by(last + age + 5_000);
        let (v, stats) = check(ops.clone(), effects.clone()).await;
        assert_eq!(v.violations(), 0, "{:?}", v.details);
        assert_eq!((stats.deleted, stats.starts_checked), (1, 3));
        let v = verify(
            &db,
            &queue,
            "t",
            &pushed_of(&[&diamond]),
            &events,
            0,
            Some(&ops),
        )
        .await
        .unwrap();
        assert_eq!((v.violations(), v.deleted, v.completed), (0, 4, 4));

        // Deleted by a round that ended 10 ms after its last finish.
        let (v, _) = check(deleted_by(last + 10_000), effects.clone()).await;
        assert_eq!(v.early_deletions, 1, "{:?}", v.details);
        assert!(v.details[0].contains("10 ms after its last job finished"));

        // A job of it never completed (no effect).
        let mut missing = effects.clone();
        missing.remove(&id("d").to_string());
        let (v, _) = check(ops.clone(), missing).await;
        assert_eq!(v.early_deletions, 1, "{:?}", v.details);
        assert!(v.details[0].contains("step(s) d never completed"));

        // Not read before the round: too young if the round ended within the age of the
        // listing, else its starts go unchecked.
        let unread = |ended: i64| OperatorLog {
            captured: HashMap::new(),
            ..deleted_by(ended)
        };
        let (v, _) = check(unread(listed + 200_000), effects.clone()).await;
        assert_eq!(v.early_deletions, 1, "{:?}", v.details);
        let (v, stats) = check(unread(listed + age + 1), effects.clone()).await;
        assert_eq!(v.violations(), 0, "{:?}", v.details);
        assert_eq!(
            (stats.deleted, stats.deleted_unread, stats.starts_checked),
            (1, 1, 0)
        );
    }
}
