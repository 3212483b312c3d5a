//! The workflow workload: fan-out / fan-in workflows (a root, middles that wait for it, a join
//! that waits for every middle) pushed with `push_workflow`, then drained by the worker of the
//! plain drain (same slots, prefetch, lease and acknowledgements), so that the cost of the
//! dependencies (each finish looks up and promotes the jobs waiting on it) shows beside the
//! plain drain of the same run. Afterwards every job must have completed exactly once, and
//! every job must have been claimed after each of its dependencies finished.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use queue_core::worker::{JobContext, JobError, Worker};
use queue_core::{JobId, JobState, NewJob, Workflow, WorkflowInfo};

use super::{bar, start_us, Latency, Measurement, Settings, LEASE, QUEUE};
use crate::backend::{BackendKind, OursNs};

/// The step without dependencies.
const ROOT: &str = "root";
/// The step that waits for every middle.
const JOIN: &str = "join";

/// How many workflows of `size` jobs stand for `jobs` jobs: `jobs / size`, at least one.
pub(crate) fn workflow_count(jobs: u64, size: u64) -> u64 {
    (jobs / size.max(1)).max(1)
}

/// How far a claim may seem to precede a dependency's finish through clock resolution alone,
/// in microseconds. SQLite takes a lease from its own clock at millisecond resolution, and a
/// finish time from the host's at microsecond resolution; PostgreSQL and MariaDB take both from
/// the server's clock at microsecond resolution.
fn clock_slack_us(kind: BackendKind) -> i64 {
    match kind {
        BackendKind::Sqlite => 1_000,
        _ => 0,
    }
}

/// One fan-out / fan-in workflow of `size` jobs (at least 3): `root`, then `m1` ..
/// `m{size - 2}` after it, then `join` after all of them.
fn fan(size: u64, payload: &str, name: String) -> Result<Workflow> {
    let job = || NewJob::from_json(QUEUE, payload);
    let middles: Vec<String> = (1..=size.saturating_sub(2))
        .map(|i| format!("m{i}"))
        .collect();
    let mut wf = Workflow::new().name(name).add(ROOT, job()?);
    for m in &middles {
        wf = wf.add_after(m.clone(), job()?, [ROOT]);
    }
    Ok(wf.add_after(JOIN, job()?, &middles))
}

/// What the workload measured and found.
pub(super) struct WorkflowRun {
    pub(super) drain: Measurement,
    pub(super) latency: Vec<Latency>,
    pub(super) violations: Vec<String>,
    pub(super) notes: Vec<String>,
}

/// One job of a workflow as stored after the drain, with what the handler saw of it.
#[derive(Clone, Debug)]
struct StepRecord {
    id: JobId,
    step: String,
    state: JobState,
    attempts: u32,
    /// `finished_at`, in microseconds since the epoch (database clock).
    finished_us: Option<i64>,
    /// The jobs it depends on.
    deps: Vec<JobId>,
    /// Its claim (lease expiry less the lease, database clock), as the handler saw it.
    claim_us: Option<i64>,
    /// When the handler started it (this process's clock).
    started: Option<Instant>,
}

/// What the ordering check found in one workflow.
#[derive(Debug, Default)]
struct OrderCheck {
    violations: Vec<String>,
    /// From the last middle's finish to the join's claim (database clock).
    join_wait: Option<Duration>,
}

/// Checks one workflow of `size` jobs: the graph pushed (a root, `size - 2` middles after it, a
/// join after all of them), every job completed on its first attempt, and every job claimed
/// (database clock, up to `slack_us`) and started (this process's clock) after each of its
/// dependencies finished and started.
fn check_order(jobs: &[StepRecord], size: u64, slack_us: i64) -> OrderCheck {
    let mut out = OrderCheck::default();
    let v = &mut out.violations;
    if jobs.len() as u64 != size {
        v.push(format!("{} jobs stored, expected {size}", jobs.len()));
    }
    let by_id: HashMap<JobId, &StepRecord> = jobs.iter().map(|j| (j.id, j)).collect();
    let roots = jobs.iter().filter(|j| j.deps.is_empty()).count();
    if roots != 1 || jobs.iter().any(|j| j.deps.is_empty() != (j.step == ROOT)) {
        v.push(format!(
            "{roots} jobs without dependencies, expected one (step {ROOT})"
        ));
    }
    let middles = size.saturating_sub(2) as usize;
    match jobs.iter().find(|j| j.step == JOIN) {
        Some(join) if join.deps.len() == middles => {}
        Some(join) => v.push(format!(
            "the join depends on {} jobs, expected {middles}",
            join.deps.len()
        )),
        None => v.push("no join step stored".into()),
    }
    for j in jobs {
        if j.state != JobState::Completed || j.attempts != 1 {
            v.push(format!(
                "step {} ({}) is {:?} after {} attempts, expected completed after 1",
                j.step, j.id, j.state, j.attempts
            ));
        }
        let (Some(claim), Some(started)) = (j.claim_us, j.started) else {
            v.push(format!(
                "step {} ({}) never reached the handler",
                j.step, j.id
            ));
            continue;
        };
        let mut last: Option<(i64, &str)> = None;
        for dep in &j.deps {
            let Some(d) = by_id.get(dep) else {
                v.push(format!(
                    "step {} depends on {dep}, not a job of the workflow",
                    j.step
                ));
                continue;
            };
            let Some(finished) = d.finished_us else {
                v.push(format!(
                    "step {}'s dependency {} never finished",
                    j.step, d.step
                ));
                continue;
            };
            if last.is_none_or(|(t, _)| finished > t) {
                last = Some((finished, &d.step));
            }
            if d.started.is_some_and(|s| started < s) {
                v.push(format!(
                    "step {} started before its dependency {} (this process's clock)",
                    j.step, d.step
                ));
            }
        }
        if let Some((finished, dep)) = last {
            if claim + slack_us < finished {
                v.push(format!(
                    "step {} was claimed {} us before its dependency {dep} finished (database clock)",
                    j.step,
                    finished - claim
                ));
            }
            if j.step == JOIN {
                out.join_wait = Some(Duration::from_micros(
                    u64::try_from(claim - finished).unwrap_or(0),
                ));
            }
        }
    }
    out
}

/// The stored jobs of `info` with what the handler saw of each.
fn records(info: &WorkflowInfo, seen: &HashMap<JobId, (i64, Instant)>) -> Vec<StepRecord> {
    info.jobs
        .iter()
        .map(|wj| {
            let s = seen.get(&wj.job.id);
            StepRecord {
                id: wj.job.id,
                step: wj.step.clone(),
                state: wj.job.state,
                attempts: wj.job.attempts,
                finished_us: wj.job.finished_at.map(|t| t.timestamp_micros()),
                deps: wj.depends_on.iter().map(|(id, _)| *id).collect(),
                claim_us: s.map(|s| s.0),
                started: s.map(|s| s.1),
            }
        })
        .collect()
}

/// Pushes the workflows one `push_workflow` at a time (timed), drains them with the plain
/// drain's worker (timed from the worker's start until every job is acknowledged), then checks.
pub(super) async fn workflow_ours(
    ns: &dyn OursNs,
    kind: BackendKind,
    s: &Settings,
    batch: crate::workload::Prefetch,
    size: u64,
    progress: bool,
) -> Result<WorkflowRun> {
    let q = ns.queue();
    let max = q.capabilities().limits.max_batch as u64;
    if size < 3 || size > max {
        bail!("a workflow of {size} jobs: it needs at least 3 (a root, a middle, a join) and at most {max} (the queue's max_batch)");
    }
    let count = workflow_count(s.jobs, size);
    let total = count * size;
    let payload = s.payload();
    // Built before the clock starts: the push time is that of the push_workflow calls.
    let built = (0..count)
        .map(|i| fan(size, &payload, format!("bench-{i}")))
        .collect::<Result<Vec<_>>>()?;
    let pb = bar(
        progress,
        total,
        format!("dbqueue push_workflow({size}) x{count}"),
    );
    let mut pushed = Vec::with_capacity(built.len());
    let mut calls = Vec::with_capacity(built.len());
    let t = Instant::now();
    for wf in built {
        let t0 = Instant::now();
        pushed.push(q.push_workflow(wf).await.context("push a workflow")?);
        calls.push(t0.elapsed());
        pb.inc(size);
    }
    let push_elapsed = t.elapsed();
    pb.finish_and_clear();

    // Each start as the handler saw it: the job, its claim (database clock), its start.
    let seen: Arc<Mutex<Vec<(JobId, i64, Instant)>>> =
        Arc::new(Mutex::new(Vec::with_capacity(total as usize)));
    let sn = seen.clone();
    let pb = bar(
        progress,
        total,
        format!("dbqueue worker x{} prefetch {batch}", s.workers),
    );
    let start = Instant::now();
    // The plain drain's worker: retention off, the same slots, prefetch and lease.
    let handle = batch
        .apply(
            Worker::builder(q.clone(), QUEUE)
                .retention(queue_core::Retention::off())
                .concurrency(s.workers),
        )
        .lease(LEASE)
        .handler_fn(move |ctx: JobContext| {
            let at = Instant::now();
            let claim = start_us(&ctx);
            sn.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((ctx.id(), claim, at));
            async { Ok::<(), JobError>(()) }
        })
        .build()?
        .start();
    let counters = handle.counters();
    let deadline = Duration::from_secs(s.workload_timeout_secs());
    let mut timed_out = false;
    while counters.completed() < total {
        if start.elapsed() > deadline {
            timed_out = true;
            break;
        }
        pb.set_position(counters.completed());
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = start.elapsed();
    pb.finish_and_clear();
    let report = handle.shutdown(Duration::from_secs(10)).await;
    if timed_out {
        bail!(
            "the worker completed {} of {total} jobs of {count} workflows in {elapsed:?}; counters {:?}",
            counters.completed(),
            counters.snapshot()
        );
    }

    let mut violations = ns.check(QUEUE).await?.violations(total);
    let snap = counters.snapshot();
    if snap.completed != total {
        violations.push(format!(
            "worker counted {} completed, expected {total}",
            snap.completed
        ));
    }
    if snap.retried + snap.dead + snap.lease_lost + snap.abandoned + snap.pop_errors != 0 {
        violations.push(format!("unexpected worker outcomes: {snap:?}"));
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
    if seen.len() as u64 != total {
        violations.push(format!(
            "the handler ran {} times for {total} jobs",
            seen.len()
        ));
    }
    let mut by_job: HashMap<JobId, (i64, Instant)> = HashMap::with_capacity(seen.len());
    let mut twice = 0u64;
    for (id, claim, at) in seen {
        if by_job.insert(id, (claim, at)).is_some() {
            twice += 1;
        }
    }
    if twice > 0 {
        violations.push(format!("{twice} handler runs were of a job already run"));
    }
    let slack = clock_slack_us(kind);
    let mut join_waits = Vec::with_capacity(pushed.len());
    let mut ours = 0u64;
    // The latest start of a root, a middle and a join, from the drain's start: where the time
    // went (a stall shows as a gap).
    let mut last = [Duration::ZERO; 3];
    for p in &pushed {
        let info = q
            .workflow(p.id)
            .await
            .with_context(|| format!("read workflow {}", p.id))?
            .with_context(|| format!("workflow {} is not stored", p.id))?;
        if !info.is_finished() {
            violations.push(format!(
                "workflow {}: not finished: {:?}",
                p.id,
                info.counts()
            ));
        }
        let jobs = records(&info, &by_job);
        ours += jobs.iter().filter(|j| by_job.contains_key(&j.id)).count() as u64;
        for j in &jobs {
            let role = match j.step.as_str() {
                ROOT => 0,
                JOIN => 2,
                _ => 1,
            };
            if let Some(at) = j.started {
                last[role] = last[role].max(at.saturating_duration_since(start));
            }
        }
        let order = check_order(&jobs, size, slack);
        violations.extend(
            order
                .violations
                .into_iter()
                .map(|v| format!("workflow {}: {v}", p.id)),
        );
        join_waits.extend(order.join_wait);
    }
    if ours != by_job.len() as u64 {
        violations.push(format!(
            "the handler ran {} jobs that are not of the workflows pushed",
            by_job.len() as u64 - ours
        ));
    }

    let mut notes = vec![format!(
        "{count} workflows of {size} jobs (1 root, {} middles after it, 1 join after all of them): {total} jobs{}; pushed one push_workflow at a time in {:.2} s ({:.0} jobs/s)",
        size - 2,
        if total == s.jobs {
            String::new()
        } else {
            format!(" (--jobs {} in whole workflows)", s.jobs)
        },
        push_elapsed.as_secs_f64(),
        total as f64 / push_elapsed.as_secs_f64().max(1e-9),
    )];
    notes.push(format!(
        "from the drain's start (this process's clock): the last root started at {:.3} s, the last middle at {:.3} s, the last join at {:.3} s; all acknowledged at {:.3} s",
        last[0].as_secs_f64(),
        last[1].as_secs_f64(),
        last[2].as_secs_f64(),
        elapsed.as_secs_f64()
    ));
    if violations.is_empty() {
        notes.push(format!(
            "order checked: every job was claimed after each of its dependencies finished (database clock{}) and started after each of them started (this process's clock)",
            if slack > 0 {
                format!(", within {slack} us: the lease clock's resolution")
            } else {
                String::new()
            }
        ));
    }
    if report.aborted != 0 {
        notes.push(format!("worker shutdown: {report:?}"));
    }
    Ok(WorkflowRun {
        drain: Measurement::new(
            format!(
                "worker runtime, {} slots, prefetch {batch}, no-op handler, {count} workflows of {size} jobs",
                s.workers
            ),
            total,
            elapsed,
        ),
        latency: vec![
            Latency::of(&format!("push_workflow call ({size} jobs)"), calls),
            Latency::of(
                "last middle finished -> join claimed (database clock)",
                join_waits,
            ),
        ],
        violations,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(step: &str, n: u128, deps: &[u128], claim: i64, finished: i64) -> StepRecord {
        StepRecord {
            id: JobId(uuid::Uuid::from_u128(n)),
            step: step.into(),
            state: JobState::Completed,
            attempts: 1,
            finished_us: Some(finished),
            deps: deps
                .iter()
                .map(|d| JobId(uuid::Uuid::from_u128(*d)))
                .collect(),
            claim_us: Some(claim),
            started: None,
        }
    }

    /// root (1) at 0..10, middles (2, 3) at 20..30 and 25..40, join (4) at 50..60.
    fn diamond() -> Vec<StepRecord> {
        let t0 = Instant::now();
        let mut jobs = vec![
            rec(ROOT, 1, &[], 0, 10),
            rec("m1", 2, &[1], 20, 30),
            rec("m2", 3, &[1], 25, 40),
            rec(JOIN, 4, &[2, 3], 50, 60),
        ];
        for (i, j) in jobs.iter_mut().enumerate() {
            j.started = Some(t0 + Duration::from_millis(i as u64));
        }
        jobs
    }

    #[test]
    fn workflows_are_whole_and_at_least_one() {
        assert_eq!(workflow_count(20_000, 1_000), 20);
        assert_eq!(workflow_count(2_500, 1_000), 2);
        assert_eq!(workflow_count(300, 1_000), 1);
        let wf = fan(5, "{}", "w".into()).unwrap();
        let steps = wf.steps();
        assert_eq!(steps.len(), 5);
        assert!(steps[0].deps().is_empty());
        assert!(steps[1..4].iter().all(|s| s.deps().len() == 1));
        assert_eq!(steps[4].name(), JOIN);
        assert_eq!(steps[4].deps().len(), 3);
        wf.validate_at(&queue_core::Limits::default(), chrono::Utc::now())
            .unwrap();
    }

    #[test]
    fn an_ordered_workflow_passes_and_reports_the_join_wait() {
        let out = check_order(&diamond(), 4, 0);
        assert!(out.violations.is_empty(), "{:?}", out.violations);
        assert_eq!(out.join_wait, Some(Duration::from_micros(10)));
    }

    #[test]
    fn a_join_claimed_before_a_middle_finished_fails() {
        let mut jobs = diamond();
        jobs[3].claim_us = Some(35);
        let out = check_order(&jobs, 4, 0);
        assert_eq!(out.violations.len(), 1, "{:?}", out.violations);
        assert!(out.violations[0].contains("5 us before its dependency m2"));
        // Within the clock's resolution it passes.
        assert!(check_order(&jobs, 4, 5).violations.is_empty());
    }

    #[test]
    fn a_job_started_before_its_dependency_or_retried_fails() {
        let mut jobs = diamond();
        // The join's handler started when the root's did, before both middles'.
        jobs[3].started = jobs[0].started;
        let out = check_order(&jobs, 4, 0);
        assert_eq!(out.violations.len(), 2, "{:?}", out.violations);
        assert!(out.violations[0].contains("join started before its dependency m1"));
        let mut jobs = diamond();
        jobs[1].attempts = 2;
        jobs[2].state = JobState::Running;
        jobs[2].claim_us = None;
        let out = check_order(&jobs, 4, 0);
        assert_eq!(out.violations.len(), 3, "{:?}", out.violations);
    }

    #[test]
    fn a_wrong_graph_fails() {
        let mut jobs = diamond();
        jobs[3].deps.pop();
        let out = check_order(&jobs, 4, 0);
        assert!(out.violations[0].contains("the join depends on 1 jobs, expected 2"));
        assert!(!check_order(&diamond(), 5, 0).violations.is_empty());
    }
}
