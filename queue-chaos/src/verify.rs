//! What a scenario's end state must satisfy, checked in the database and in the run logs.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use dbqueue::{JobId, JobState, Queue, WorkflowId, WorkflowInfo};
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
    /// for a reason other than expired leases, or a cancelled job).
    pub(crate) unexplained: u64,
    /// Violation: starts of a workflow job (any attempt, on the database's clock) before one
    /// of its dependencies had finished (its `finished_at`), or although one never finished.
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

/// Checks the final state of `pushed` in the database and the overlaps in `events`.
pub(crate) async fn verify(
    db: &Db,
    queue: &Arc<dyn Queue>,
    ns: &str,
    pushed: &[Pushed],
    events: &[Event],
    overdue_stuck: u64,
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
                exp: e.exp,
                end: None,
                starts: 0,
            });
        match e.what {
            What::Start => {
                x.starts += 1;
                x.start = x.start.min(e.t);
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
                v.unexplained += 1;
                v.note(format!("job {} was cancelled", p.id));
            }
        }
        if let Some(execs) = execs {
            v.executions += execs.values().map(|x| u64::from(x.starts)).sum::<u64>();
            if let Some((token, _)) = execs.iter().find(|(_, x)| x.starts > 1) {
                v.overlaps += 1;
                v.note(format!("job {}: lease token {token} started twice", p.id));
            }
            // Two executions overlap when both ran while holding a live lease at one moment.
            let mut sorted: Vec<&Execution> = execs.values().collect();
            sorted.sort_by_key(|x| x.start);
            for (i, later) in sorted.iter().enumerate().skip(1) {
                if let Some(earlier) = sorted[..i].iter().find(|earlier| {
                    later.start < earlier.live_until() && later.start < later.live_until()
                }) {
                    v.overlaps += 1;
                    v.note(format!(
                        "job {}: two executions held a live lease at once, for {} µs",
                        p.id,
                        earlier.live_until().min(later.live_until()) - later.start
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
    /// `(job, dependency)`: every edge as built.
    pub(crate) edges: Vec<(JobId, JobId)>,
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
    /// Workflows with a job that did not complete (its jobs are counted as stuck, dead or
    /// unexplained).
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
}

/// Checks the workflows: each stored as built and finished with every job completed, and no
/// job started (on the database's clock) before each of its dependencies had finished.
pub(crate) async fn verify_workflows(
    queue: &Arc<dyn Queue>,
    flows: &[PushedFlow],
    events: &[Event],
    v: &mut Verdict,
) -> anyhow::Result<FlowStats> {
    let mut stats = FlowStats {
        workflows: flows.len() as u64,
        ..FlowStats::default()
    };
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
    // Every job of every workflow as stored, and the steps' names.
    let mut stored: HashMap<JobId, dbqueue::Job> = HashMap::new();
    let mut steps: HashMap<JobId, String> = HashMap::new();
    for (i, info) in infos {
        let f = &flows[i];
        for (step, id) in &f.jobs {
            steps.insert(*id, step.clone());
        }
        let Some(info) = info? else {
            v.lost += 1;
            v.note(format!("{} workflow {} is missing", f.shape, f.id));
            continue;
        };
        let built: HashSet<(JobId, JobId)> = f.edges.iter().copied().collect();
        let kept: HashSet<(JobId, JobId)> = info
            .jobs
            .iter()
            .flat_map(|j| j.depends_on.iter().map(|(d, _)| (j.job.id, *d)))
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
            // What each job left waiting waits for.
            let states: HashMap<JobId, &dbqueue::Job> =
                info.jobs.iter().map(|j| (j.job.id, &j.job)).collect();
            for j in info
                .jobs
                .iter()
                .filter(|j| j.job.state == JobState::Waiting)
            {
                let deps: Vec<String> = j
                    .depends_on
                    .iter()
                    .map(|(d, _)| {
                        let step = steps.get(d).map_or("?", String::as_str);
                        let state = states.get(d).map_or("gone".to_owned(), |x| {
                            format!("{} (finished {:?})", x.state, x.finished_at)
                        });
                        format!("{step}: {state}")
                    })
                    .collect();
                v.note(format!(
                    "  job {} (step {}) still waits for {}",
                    j.job.id,
                    j.step,
                    deps.join("; ")
                ));
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
    let deps_of: HashMap<JobId, Vec<JobId>> =
        flows
            .iter()
            .flat_map(|f| f.edges.iter())
            .fold(HashMap::new(), |mut m, (job, dep)| {
                m.entry(*job).or_insert_with(Vec::new).push(*dep);
                m
            });
    let outputs: Vec<(JobId, dbqueue::Result<Option<dbqueue::Job>>)> =
        futures::stream::iter(deps_of.keys().copied())
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
    let mut waits = Vec::new();
    for (job, deps) in &deps_of {
        stats.dependents += 1;
        let finished: Vec<(JobId, Option<i64>)> = deps
            .iter()
            .map(|d| {
                (
                    *d,
                    stored
                        .get(d)
                        .and_then(|x| x.finished_at)
                        .map(|t| t.timestamp_micros()),
                )
            })
            .collect();
        let Some(list) = starts.get(&job.0) else {
            continue;
        };
        for (attempt, t) in list {
            stats.starts_checked += 1;
            let early: Vec<String> = finished
                .iter()
                .filter(|(_, fin)| fin.is_none_or(|fin| *t < fin))
                .map(|(d, fin)| {
                    let step = steps.get(d).map_or("?", String::as_str);
                    match fin {
                        Some(fin) => format!("{step} finished {} µs later", fin - t),
                        None => format!("{step} never finished"),
                    }
                })
                .collect();
            if !early.is_empty() {
                v.early_starts += 1;
                v.note(format!(
                    "job {job} (step {}) attempt {attempt} started at {t} µs on the database's clock before its dependencies finished: {}",
                    steps.get(job).map_or("?", String::as_str),
                    early.join("; ")
                ));
            }
        }
        let last = finished
            .iter()
            .map(|(_, f)| *f)
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

    use dbqueue::{NewJob, PopRequest, SqliteQueue, Workflow};

    use super::*;
    use crate::runlog::{Ended, Event, What};

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
            edges: vec![
                (id("b"), id("a")),
                (id("c"), id("a")),
                (id("d"), id("b")),
                (id("d"), id("c")),
            ],
        };
        let before_a = queue.now().await.unwrap().timestamp_micros();
        let mut events = run(&queue, 1, before_a).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        let now = || async { queue.now().await.unwrap().timestamp_micros() };
        events.extend(run(&queue, 2, now().await).await);
        tokio::time::sleep(Duration::from_millis(5)).await;
        events.extend(run(&queue, 1, now().await).await);

        let mut v = Verdict::default();
        let stats = verify_workflows(&queue, std::slice::from_ref(&flow), &events, &mut v)
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
        verify_workflows(&queue, &[flow], &events, &mut v)
            .await
            .unwrap();
        assert_eq!(v.early_starts, 1, "{:?}", v.details);
        assert!(
            v.details[0].contains("(step b) attempt 2"),
            "{:?}",
            v.details
        );
    }
}
