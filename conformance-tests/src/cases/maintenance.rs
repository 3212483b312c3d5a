//! Work on many jobs at once: retention rounds (by age per state, once across processes), bulk
//! cancel, retry and delete by filter, and `stats` that counts finished jobs up to a cap. Each
//! case checks which rows the database still holds, and in which state.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use queue_core::worker::Worker;
use queue_core::{
    BulkAction, BulkOutcome, Error, Failure, JobFilter, JobId, JobState, NewJob, Queue, Retention,
    Unique, Workflow, WorkflowId, WorkflowListRequest,
};
use serde_json::json;

use super::{expect_state, invalid_field, job, pop, pop_one, sleep_until_db, LONG_LEASE};
use crate::Ctx;

/// Jobs of `queue` brought to `state` (running ones under a long lease), one by one.
async fn make(
    q: &Arc<dyn Queue>,
    queue: &str,
    kind: &str,
    state: JobState,
    n: usize,
) -> anyhow::Result<Vec<JobId>> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        // A job to be popped goes ahead of the queue's pending ones.
        let priority = if state == JobState::Pending { 0 } else { 100 };
        let id = q
            .push(job(queue, json!({ "i": i })).kind(kind).priority(priority))
            .await?;
        match state {
            JobState::Pending => {}
            JobState::Waiting => anyhow::bail!("a job pushed alone is never waiting"),
            JobState::Cancelled => q.cancel(id).await?,
            JobState::Running | JobState::Completed | JobState::Dead => {
                let l = pop_one(q, queue).await?;
                ensure!(l.job.id == id, "popped {} instead of {id}", l.job.id);
                match state {
                    JobState::Completed => q.ack(&l.lease).await?,
                    JobState::Dead => {
                        q.fail(&l.lease, Failure::permanent("boom")).await?;
                    }
                    _ => {}
                }
            }
        }
        ids.push(id);
    }
    Ok(ids)
}

/// `n` pending jobs of `queue`, pushed in batches.
async fn many(q: &Arc<dyn Queue>, queue: &str, n: usize) -> anyhow::Result<Vec<JobId>> {
    let mut ids = Vec::with_capacity(n);
    let batch = q.capabilities().limits.max_batch;
    let mut i = 0;
    while i < n {
        let jobs: Vec<NewJob> = (i..n.min(i + batch))
            .map(|k| job(queue, json!({ "k": k })))
            .collect();
        i += jobs.len();
        ids.extend(q.push_batch(jobs).await?);
    }
    Ok(ids)
}

async fn exists(q: &Arc<dyn Queue>, id: JobId) -> anyhow::Result<bool> {
    Ok(q.get(id).await?.is_some())
}

/// Waits (up to 15 s) until none of `ids` is stored any more.
async fn all_gone(q: &Arc<dyn Queue>, ids: &[JobId], what: &str) -> anyhow::Result<()> {
    super::eventually(Duration::from_secs(15), what, || {
        let (q, ids) = (q.clone(), ids.to_vec());
        async move {
            for id in &ids {
                if q.get(*id).await?.is_some() {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        }
    })
    .await
}

fn filter(queue: &str) -> JobFilter {
    JobFilter {
        queue: Some(queue.into()),
        ..JobFilter::default()
    }
}

/// A round deletes the finished jobs of the states it names once they are older than their
/// age, and nothing else: not younger ones, not kept states, not live jobs. A second round
/// within the interval does not run.
pub async fn retention_deletes_only_what_its_rules_say(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    super::seconds_of_retention(&ctx, &*fx)?;
    let q = fx.queue();
    let mut old = HashMap::new();
    for state in [
        JobState::Completed,
        JobState::Dead,
        JobState::Cancelled,
        JobState::Pending,
        JobState::Running,
    ] {
        old.insert(state, make(&q, "r.old", "k", state, 2).await?);
    }
    let before = q.now().await?;
    // The young jobs stay younger than the age through the calls below on a loaded machine.
    sleep_until_db(&q, before + chrono::Duration::milliseconds(4_000)).await?;
    let mut young = HashMap::new();
    for state in [JobState::Completed, JobState::Dead, JobState::Cancelled] {
        young.insert(state, make(&q, "r.young", "k", state, 1).await?);
    }
    let rules = Retention::off()
        .delete_after(JobState::Completed, Duration::from_millis(2_500))
        .delete_after(JobState::Cancelled, Duration::from_millis(2_500));
    let report = q
        .run_retention(&rules)
        .await?
        .context("the first round did not run")?;
    ensure!(
        (
            report.completed,
            report.cancelled,
            report.dead,
            report.unfinished
        ) == (2, 2, 0, false),
        "{report:?}"
    );
    for (state, ids) in &old {
        let gone = matches!(state, JobState::Completed | JobState::Cancelled);
        for id in ids {
            ensure!(
                exists(&q, *id).await? != gone,
                "old {state} job {id}: deleted {}",
                !exists(&q, *id).await?
            );
        }
    }
    for (state, ids) in &young {
        for id in ids {
            expect_state(&q, *id, *state).await?;
        }
    }
    ensure!(
        q.run_retention(&rules).await?.is_none(),
        "a second round ran within the interval"
    );
    Ok(())
}

/// Rounds started at once by four callers on two connection pools (as two processes): exactly
/// one runs, and it deletes every expired job (more than one statement's worth) once.
pub async fn retention_runs_once_across_processes(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    super::seconds_of_retention(&ctx, &*fx)?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    let n = 5_500;
    many(&q, "r.many", n).await?;
    let cancelled = q.bulk(BulkAction::Cancel, &filter("r.many")).await?;
    ensure!(cancelled.changed == n as u64, "{cancelled:?}");
    let rules = Retention::off()
        .delete_after(JobState::Cancelled, Duration::ZERO)
        .interval(Duration::from_secs(1));
    let rounds: Vec<_> = (0..4)
        .map(|i| {
            let (qv, rules) = (
                if i % 2 == 0 { q.clone() } else { q2.clone() },
                rules.clone(),
            );
            tokio::spawn(async move { qv.run_retention(&rules).await })
        })
        .collect();
    let mut ran = Vec::new();
    for r in rounds {
        if let Some(report) = r.await?? {
            ran.push(report);
        }
    }
    ensure!(ran.len() == 1, "{} rounds ran: {ran:?}", ran.len());
    ensure!(ran[0].cancelled == n as u64, "{:?}", ran[0]);
    let left = q
        .count_matching(BulkAction::Delete, &filter("r.many"))
        .await?;
    ensure!(left == 0, "{left} jobs left");
    // The next round is due an interval after this one ended.
    let start = q.now().await?;
    sleep_until_db(&q, start + chrono::Duration::milliseconds(1100)).await?;
    let next = q2.run_retention(&rules).await?;
    ensure!(
        next.is_some_and(|r| r.total() == 0),
        "the next round: {next:?}"
    );
    Ok(())
}

/// The gauge sampler's lease: of holders on two pools (as two processes) trying at once, one
/// takes it; the holder renews it while the others are refused; once the holder stops renewing,
/// another takes it when it runs out, and the old holder is then refused.
pub async fn gauge_lease_has_one_holder_at_a_time(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    let lease = Duration::from_secs(1);
    let holders: Vec<uuid::Uuid> = (0..4).map(|_| uuid::Uuid::new_v4()).collect();
    let tries: Vec<_> = holders
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let (qv, h) = (if i % 2 == 0 { q.clone() } else { q2.clone() }, *h);
            tokio::spawn(async move { qv.gauge_lease(h, lease).await })
        })
        .collect();
    let mut took = Vec::new();
    for (i, t) in tries.into_iter().enumerate() {
        if t.await?? {
            took.push(holders[i]);
        }
    }
    ensure!(
        took.len() == 1,
        "{} holders took the lease at once",
        took.len()
    );
    let (holder, other) = (took[0], *holders.iter().find(|h| **h != took[0]).unwrap());
    // Renewed by its holder, refused to the others, across more than one lease's length.
    let start = q.now().await?;
    for step in 1..=3 {
        sleep_until_db(&q, start + chrono::Duration::milliseconds(500 * step)).await?;
        ensure!(
            q2.gauge_lease(holder, lease).await?,
            "the holder could not renew"
        );
        ensure!(
            !q.gauge_lease(other, lease).await?,
            "another holder took a held lease"
        );
    }
    // The holder stops: once its lease has run out, another takes it, and it is refused.
    let stopped = q.now().await?;
    ensure!(
        !q.gauge_lease(other, lease).await?,
        "taken before the lease ran out"
    );
    sleep_until_db(&q, stopped + chrono::Duration::milliseconds(1100)).await?;
    ensure!(
        q.gauge_lease(other, lease).await?,
        "the lease was not taken over"
    );
    ensure!(
        !q2.gauge_lease(holder, lease).await?,
        "the old holder kept a lease taken over"
    );
    Ok(())
}

/// A worker runs retention by itself: the jobs it completes are deleted by its rules.
pub async fn retention_by_the_worker(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    super::seconds_of_retention(&ctx, &*fx)?;
    let q = fx.queue();
    let ids = many(&q, "r.worker", 20).await?;
    let keep = make(&q, "r.kept", "k", JobState::Dead, 1).await?;
    let handle = Worker::builder(q.clone(), "r.worker")
        .poll_interval(Duration::from_millis(10), Duration::from_millis(50))
        .retention(
            Retention::off()
                .delete_after(JobState::Completed, Duration::ZERO)
                .interval(Duration::from_secs(1)),
        )
        .handler_fn(|_ctx| async { Ok(()) })
        .build()?
        .start();
    let gone = all_gone(
        &q,
        &ids,
        "the worker's retention deleted its completed jobs",
    )
    .await;
    handle.shutdown(Duration::from_secs(2)).await;
    gone?;
    expect_state(&q, keep[0], JobState::Dead).await?;
    Ok(())
}

/// The workflows listed now (every one: the case makes fewer than a page).
async fn listed(q: &Arc<dyn Queue>) -> anyhow::Result<Vec<WorkflowId>> {
    let mut ids = Vec::new();
    let mut before = None;
    loop {
        let page = q
            .workflows(WorkflowListRequest {
                before,
                limit: 1_000,
            })
            .await?;
        let Some(last) = page.last() else {
            return Ok(ids);
        };
        before = Some(last.id);
        ids.extend(page.iter().map(|w| w.id));
    }
}

/// Pops the one due job of `queue`, checks it is `id`, and completes it.
async fn complete(q: &Arc<dyn Queue>, queue: &str, id: JobId) -> anyhow::Result<()> {
    let l = pop_one(q, queue).await?;
    ensure!(l.job.id == id, "popped {} instead of {id}", l.job.id);
    q.ack(&l.lease).await?;
    Ok(())
}

/// A round deletes a workflow as a whole (its jobs, its row, its steps, its dependencies) once
/// every job of it finished longer ago than its state's age, and one none of whose jobs
/// exists any more (each deleted by hand) once it is older than the rules' shortest age, more
/// than one transaction's worth; it keeps a workflow with a job left to run (its completed
/// first job too, whose output the second may read) and a young one whose job was deleted by
/// hand, and deletes each of those in a later round once it qualifies.
pub async fn retention_deletes_the_rows_of_finished_workflows(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    super::seconds_of_retention(&ctx, &*fx)?;
    let q = fx.queue();
    // A chain run to completion: both jobs pruned by age, then its rows.
    let done = q
        .push_workflow(
            Workflow::new()
                .then("a", job("rw.done", json!("a")))
                .then("b", job("rw.done", json!("b"))),
        )
        .await?;
    let (a, b) = (done.job("a").expect("a"), done.job("b").expect("b"));
    complete(&q, "rw.done", a).await?;
    complete(&q, "rw.done", b).await?;
    // A chain whose first job completes (and is pruned) while its second stays pending.
    let kept = q
        .push_workflow(
            Workflow::new()
                .then("first", job("rw.kept", json!("first")))
                .then("second", job("rw.kept", json!("second"))),
        )
        .await?;
    let (first, second) = (
        kept.job("first").expect("first"),
        kept.job("second").expect("second"),
    );
    complete(&q, "rw.kept", first).await?;
    expect_state(&q, second, JobState::Pending).await?;
    // More workflows without jobs than one statement deletes: each job cancelled and deleted.
    let n = 520;
    let mut emptied = Vec::with_capacity(n);
    for i in 0..n {
        let w = q
            .push_workflow(Workflow::new().add("only", job("rw.many", json!(i))))
            .await?;
        emptied.push(w.id);
    }
    let cancelled = q.bulk(BulkAction::Cancel, &filter("rw.many")).await?;
    ensure!(cancelled.changed == n as u64, "{cancelled:?}");
    let deleted = q.bulk(BulkAction::Delete, &filter("rw.many")).await?;
    ensure!(deleted.changed == n as u64, "{deleted:?}");
    // Old enough for the rules (completed jobs after 3 s; the workflows older than that); the
    // young workflow stays younger through the calls below on a loaded machine.
    let age = Duration::from_secs(3);
    let start = q.now().await?;
    sleep_until_db(&q, start + chrono::Duration::milliseconds(5_500)).await?;
    // A young workflow whose only job is gone already (completed, then deleted by hand).
    let young = q
        .push_workflow(Workflow::new().add("only", job("rw.young", json!("y"))))
        .await?;
    complete(&q, "rw.young", young.job("only").expect("only")).await?;
    let gone = q.bulk(BulkAction::Delete, &filter("rw.young")).await?;
    ensure!(gone.changed == 1, "{gone:?}");
    ensure!(
        q.dependencies(b).await?.len() == 1,
        "the dependency of b before the round"
    );
    let rules = Retention::off()
        .delete_after(JobState::Completed, age)
        .interval(Duration::from_secs(1));
    let report = q
        .run_retention(&rules)
        .await?
        .context("the round did not run")?;
    ensure!(
        (
            report.completed,
            report.workflows,
            report.workflow_jobs,
            report.unfinished
        ) == (0, 1 + n as u64, 2, false),
        "{report:?}"
    );
    // The finished workflow: no row, not listed, no dependency left.
    ensure!(
        q.workflow(done.id).await?.is_none(),
        "the finished workflow is still there"
    );
    ensure!(
        q.dependencies(b).await?.is_empty(),
        "the dependency of the finished workflow's job is still there"
    );
    let ids = listed(&q).await?;
    ensure!(
        !ids.contains(&done.id) && !emptied.iter().any(|id| ids.contains(id)),
        "pruned workflows still listed: {ids:?}"
    );
    for id in &emptied {
        ensure!(
            q.workflow(*id).await?.is_none(),
            "workflow {id} is still there"
        );
    }
    // The workflow with a job left, and the young one: kept, with their jobs, steps and
    // dependencies.
    let info = q
        .workflow(kept.id)
        .await?
        .context("the workflow with a pending job was deleted")?;
    ensure!(info.jobs.len() == 2, "{info:?}");
    let second_step = info
        .jobs
        .iter()
        .find(|j| j.job.id == second)
        .context("the second step")?;
    ensure!(
        second_step.step == "second"
            && second_step
                .depends_on
                .iter()
                .map(|(dep, _)| *dep)
                .collect::<Vec<_>>()
                == [first],
        "{info:?}"
    );
    let deps = q.dependencies(second).await?;
    ensure!(
        deps.len() == 1 && deps[0].id == first && deps[0].state == Some(JobState::Completed),
        "{deps:?}"
    );
    ensure!(
        q.workflow(young.id).await?.is_some(),
        "the young workflow was deleted"
    );
    ensure!(
        ids.contains(&kept.id) && ids.contains(&young.id) && ids.len() == 2,
        "{ids:?}"
    );
    // Once the last job of the one is gone and the other is old enough, a later round takes
    // both.
    complete(&q, "rw.kept", second).await?;
    let now = q.now().await?;
    sleep_until_db(&q, now + chrono::Duration::milliseconds(4_500)).await?;
    let report = q
        .run_retention(&rules)
        .await?
        .context("the second round did not run")?;
    ensure!(
        (report.completed, report.workflows, report.workflow_jobs) == (0, 2, 2),
        "{report:?}"
    );
    for id in [kept.id, young.id] {
        ensure!(
            q.workflow(id).await?.is_none(),
            "workflow {id} is still there"
        );
    }
    ensure!(q.dependencies(second).await?.is_empty());
    ensure!(listed(&q).await?.is_empty());
    Ok(())
}

/// Bad rules are refused before the lease row is touched: a valid round runs right after.
pub async fn retention_bad_rules_store_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    super::seconds_of_retention(&ctx, &*fx)?;
    let q = fx.queue();
    let done = make(&q, "r.bad", "k", JobState::Completed, 1).await?;
    for (rules, field) in [
        (
            Retention::default().interval(Duration::ZERO),
            "retention.interval",
        ),
        (
            Retention::default()
                .delete_after(JobState::Completed, Duration::from_secs(400_000_000)),
            "retention.completed",
        ),
        (
            Retention::default().delete_after(JobState::Running, Duration::ZERO),
            "retention.state",
        ),
    ] {
        let r = q.run_retention(&rules).await;
        ensure!(
            invalid_field(&r).as_deref() == Ok(field),
            "{rules:?}: {r:?}"
        );
    }
    expect_state(&q, done[0], JobState::Completed).await?;
    let ran = q
        .run_retention(&Retention::off().delete_after(JobState::Completed, Duration::ZERO))
        .await?;
    ensure!(ran.is_some_and(|r| r.completed == 1), "{ran:?}");
    ensure!(!exists(&q, done[0]).await?);
    Ok(())
}

/// Cancel by queue and kind touches exactly the pending and running jobs of that queue and
/// kind; the count offered beforehand is what it touched; a cancelled running job's holder
/// learns of it.
pub async fn bulk_cancel_touches_exactly_the_filtered_jobs(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let mut jobs: Vec<(JobId, &str, &str, JobState)> = Vec::new();
    for (queue, kind) in [("b.a", "x"), ("b.a", "y"), ("b.b", "x")] {
        for state in [JobState::Pending, JobState::Completed, JobState::Dead] {
            for id in make(&q, queue, kind, state, 2).await? {
                jobs.push((id, queue, kind, state));
            }
        }
    }
    let running = q
        .push(job("b.a", json!({})).kind("x").priority(100))
        .await?;
    let held = pop_one(&q, "b.a").await?;
    ensure!(held.job.id == running, "popped {}", held.job.id);
    jobs.push((running, "b.a", "x", JobState::Running));
    let f = JobFilter {
        kind: Some("x".into()),
        ..filter("b.a")
    };
    let hit = |queue: &str, kind: &str, state: JobState| {
        queue == "b.a" && kind == "x" && matches!(state, JobState::Pending | JobState::Running)
    };
    let expected = jobs.iter().filter(|(_, q, k, s)| hit(q, k, *s)).count() as u64;
    let counted = q.count_matching(BulkAction::Cancel, &f).await?;
    ensure!(
        counted == expected,
        "counted {counted}, expected {expected}"
    );
    let done = q.bulk(BulkAction::Cancel, &f).await?;
    ensure!(
        done == BulkOutcome {
            changed: expected,
            skipped: 0
        },
        "{done:?}"
    );
    for (id, queue, kind, state) in &jobs {
        let want = if hit(queue, kind, *state) {
            JobState::Cancelled
        } else {
            *state
        };
        expect_state(&q, *id, want).await?;
    }
    match q.ack(&held.lease).await {
        Err(Error::Cancelled { job }) if job == running => {}
        other => bail!("the holder's ack after a bulk cancel: {other:?}"),
    }
    ensure!(q.count_matching(BulkAction::Cancel, &f).await? == 0);
    Ok(())
}

/// Retry by age: only dead jobs created before the cut go back to pending; one whose unique
/// key a live job holds is skipped and stays dead.
pub async fn bulk_retry_by_age_skips_held_keys(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let old = make(&q, "b.retry", "k", JobState::Dead, 3).await?;
    // A dead unique job whose key a newer pending job holds.
    let rule = Unique::new()
        .by_args()
        .states([JobState::Pending, JobState::Running]);
    let u = q
        .push(
            job("b.retry", json!({"u": 1}))
                .kind("k")
                .unique(rule.clone()),
        )
        .await?;
    let l = pop(&q, "b.retry", 10, LONG_LEASE, "w").await?;
    let lu = l
        .iter()
        .find(|l| l.job.id == u)
        .context("the unique job was not popped")?;
    q.fail(&lu.lease, Failure::permanent("boom")).await?;
    for other in l.iter().filter(|l| l.job.id != u) {
        q.release(&other.lease).await?;
    }
    let holder = q
        .push(job("b.retry", json!({"u": 1})).kind("k").unique(rule))
        .await?;
    ensure!(holder != u, "the key was not free after the job died");
    let cut = q.now().await?;
    // The young jobs stay younger than the age through the calls below on a loaded machine.
    sleep_until_db(&q, cut + chrono::Duration::milliseconds(4_000)).await?;
    let young = make(&q, "b.retry", "k", JobState::Dead, 2).await?;
    let f = JobFilter {
        older_than: Some(Duration::from_millis(2_500)),
        ..filter("b.retry")
    };
    ensure!(q.count_matching(BulkAction::Retry, &f).await? == 4);
    let done = q.bulk(BulkAction::Retry, &f).await?;
    ensure!(
        done == BulkOutcome {
            changed: 3,
            skipped: 1
        },
        "{done:?}"
    );
    for id in &old {
        let j = expect_state(&q, *id, JobState::Pending).await?;
        ensure!(j.attempts == 0, "{j:?}");
    }
    expect_state(&q, u, JobState::Dead).await?;
    expect_state(&q, holder, JobState::Pending).await?;
    for id in &young {
        expect_state(&q, *id, JobState::Dead).await?;
    }
    Ok(())
}

/// Delete by queue goes batch by batch through more jobs than one batch holds, and leaves
/// other queues and running jobs alone; a filter naming a state the action does not apply to
/// is refused.
pub async fn bulk_delete_in_batches(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let n = 2_500;
    many(&q, "b.del", n).await?;
    let running = q.push(job("b.del", json!({}))).await?;
    let l = pop(&q, "b.del", 100, LONG_LEASE, "w").await?;
    let held = l
        .iter()
        .find(|l| l.job.id == running)
        .map(|l| l.job.id)
        .unwrap_or(l[0].job.id);
    for other in l.iter().filter(|l| l.job.id != held) {
        q.release(&other.lease).await?;
    }
    let other = many(&q, "b.other", 3).await?;
    let refused = q
        .bulk(
            BulkAction::Delete,
            &JobFilter {
                state: Some(JobState::Running),
                ..filter("b.del")
            },
        )
        .await;
    ensure!(
        invalid_field(&refused).as_deref() == Ok("state"),
        "{refused:?}"
    );
    ensure!(exists(&q, held).await?, "a refused delete deleted");
    let done = q.bulk(BulkAction::Delete, &filter("b.del")).await?;
    ensure!(
        done == BulkOutcome {
            changed: n as u64,
            skipped: 0
        },
        "{done:?}"
    );
    expect_state(&q, held, JobState::Running).await?;
    for id in &other {
        expect_state(&q, *id, JobState::Pending).await?;
    }
    let left = q.stats(Some("b.del")).await?;
    ensure!(
        left[0].count(JobState::Pending) == 0 && left[0].running == 1,
        "{left:?}"
    );
    Ok(())
}

/// Bad filters name their field, and nothing is touched.
pub async fn bulk_bad_filters_touch_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let ids = make(&q, "b.bad", "k", JobState::Pending, 2).await?;
    for (action, f, field) in [
        (BulkAction::Cancel, filter("no spaces"), "queue"),
        (
            BulkAction::Cancel,
            JobFilter {
                kind: Some("no spaces".into()),
                ..filter("b.bad")
            },
            "kind",
        ),
        (
            BulkAction::Cancel,
            JobFilter {
                state: Some(JobState::Completed),
                ..filter("b.bad")
            },
            "state",
        ),
        (
            BulkAction::Retry,
            JobFilter {
                state: Some(JobState::Pending),
                ..filter("b.bad")
            },
            "state",
        ),
        (
            BulkAction::Delete,
            JobFilter {
                older_than: Some(Duration::from_secs(400_000_000)),
                ..filter("b.bad")
            },
            "older_than",
        ),
    ] {
        let r = q.bulk(action, &f).await;
        ensure!(
            invalid_field(&r).as_deref() == Ok(field),
            "{action} {f:?}: {r:?}"
        );
        let c = q.count_matching(action, &f).await;
        ensure!(
            invalid_field(&c).as_deref() == Ok(field),
            "count {action} {f:?}: {c:?}"
        );
    }
    for id in &ids {
        expect_state(&q, *id, JobState::Pending).await?;
    }
    Ok(())
}

/// `stats` counts every live job exactly and finished jobs up to the cap: a queue that has
/// only finished jobs, or only live ones, is listed too.
pub async fn stats_count_finished_jobs_up_to_the_cap(ctx: Ctx) -> anyhow::Result<()> {
    let mut config = ctx.config();
    config.limits.stats_count_cap = Some(3);
    let fx = ctx.fixture_with(config).await?;
    let q = fx.queue();
    make(&q, "s.one", "k", JobState::Completed, 5).await?;
    make(&q, "s.one", "k", JobState::Dead, 2).await?;
    make(&q, "s.one", "k", JobState::Cancelled, 1).await?;
    make(&q, "s.one", "k", JobState::Running, 1).await?;
    make(&q, "s.one", "k", JobState::Pending, 4).await?;
    q.push(job("s.one", json!({})).delay(Duration::from_secs(3600)))
        .await?;
    make(&q, "s.finished", "k", JobState::Dead, 4).await?;
    make(&q, "s.live", "k", JobState::Pending, 1).await?;
    let all = q.stats(None).await?;
    let names: Vec<&str> = all.iter().map(|s| s.queue.as_str()).collect();
    ensure!(
        names == ["s.finished", "s.live", "s.one"],
        "queues {names:?}"
    );
    let one = &all[2];
    ensure!(
        (
            one.available,
            one.scheduled,
            one.running,
            one.completed,
            one.dead,
            one.cancelled
        ) == (4, 1, 1, 3, 2, 1),
        "{one:?}"
    );
    ensure!(
        one.count_cap == Some(3)
            && one.at_least(JobState::Completed)
            && !one.at_least(JobState::Dead)
            && !one.at_least(JobState::Pending),
        "{one:?}"
    );
    ensure!(
        all[0].dead == 3 && all[0].at_least(JobState::Dead),
        "{:?}",
        all[0]
    );
    ensure!(
        all[1].available == 1 && all[1].completed == 0,
        "{:?}",
        all[1]
    );
    let only = q.stats(Some("s.finished")).await?;
    ensure!(only.len() == 1 && only[0].dead == 3, "{only:?}");
    // Uncapped: exact.
    let mut config = ctx.config();
    config.limits.stats_count_cap = None;
    let fx = ctx.fixture_with(config).await?;
    let q = fx.queue();
    make(&q, "s.one", "k", JobState::Completed, 5).await?;
    let exact = q.stats(Some("s.one")).await?;
    ensure!(
        exact[0].completed == 5
            && exact[0].count_cap.is_none()
            && !exact[0].at_least(JobState::Completed),
        "{exact:?}"
    );
    Ok(())
}

/// A queue that does not keep completed jobs (`keep_completed_jobs(false)`) deletes a job in the
/// statement that completes it, through every completion path (one ack, a batch, the worker's
/// acknowledge-and-claim), fenced by the lease like the update: a lost lease deletes nothing.
/// It keeps, as completed, the jobs whose rows are still needed: one completed with an output,
/// a step of a workflow (whose dependent is then promoted), a unique job whose rule covers the
/// completed state (a second push is still refused); a unique job whose rule does not is
/// deleted, and its key is free again. Failed jobs stay dead.
pub async fn completions_delete_what_nothing_needs(ctx: Ctx) -> anyhow::Result<()> {
    let mut config = ctx.config();
    config.keep_completed = false;
    let fx = ctx.fixture_with(config).await?;
    let q = fx.queue();
    // One ack.
    let one = q.push(job("k.one", json!({ "n": 1 }))).await?;
    q.ack(&pop_one(&q, "k.one").await?.lease).await?;
    ensure!(
        !exists(&q, one).await?,
        "an acknowledged job is still stored"
    );
    // A batch, one of whose leases was lost: that job is left as its new holder has it.
    let ids = many(&q, "k.batch", 4).await?;
    let popped = pop(&q, "k.batch", 4, LONG_LEASE, "w1").await?;
    ensure!(popped.len() == 4, "popped {} of 4", popped.len());
    let lost = &popped[3];
    q.release(&lost.lease).await?;
    let again = pop_one(&q, "k.batch").await?;
    ensure!(again.job.id == lost.job.id, "popped {} again", again.job.id);
    let leases: Vec<_> = popped.iter().map(|l| l.lease.clone()).collect();
    let acked = q.ack_batch(&leases).await?;
    ensure!(acked == 3, "acknowledged {acked} of the batch, expected 3");
    for id in &ids {
        let stored = q.get(*id).await?;
        if *id == lost.job.id {
            let held = stored.context("the job whose lease was lost is gone")?;
            ensure!(
                held.state == JobState::Running,
                "the job whose lease was lost is {:?}",
                held.state
            );
        } else {
            ensure!(stored.is_none(), "acknowledged job {id} is still stored");
        }
    }
    match q.ack(&lost.lease).await {
        Err(Error::LeaseLost { .. }) => {}
        other => bail!("ack under a lost lease: {other:?}"),
    }
    expect_state(&q, lost.job.id, JobState::Running).await?;
    // Rows still needed are kept, completed.
    let with_output = q.push(job("k.kept", json!({ "n": "output" }))).await?;
    let l = pop_one(&q, "k.kept").await?;
    let output = serde_json::value::RawValue::from_string(r#"{"rows":3}"#.into())?;
    q.ack_with_output(&l.lease, &output).await?;
    let kept = expect_state(&q, with_output, JobState::Completed).await?;
    ensure!(
        kept.output.as_ref().map(|o| o.get()) == Some(r#"{"rows":3}"#),
        "output {:?}",
        kept.output
    );
    let flow = q
        .push_workflow(
            Workflow::new()
                .then("a", job("k.flow", json!("a")))
                .then("b", job("k.flow", json!("b"))),
        )
        .await?;
    let (a, b) = (flow.job("a").expect("a"), flow.job("b").expect("b"));
    complete(&q, "k.flow", a).await?;
    expect_state(&q, a, JobState::Completed).await?;
    expect_state(&q, b, JobState::Pending).await?;
    complete(&q, "k.flow", b).await?;
    expect_state(&q, b, JobState::Completed).await?;
    let held_rule = Unique::new().by_args();
    let held = q
        .push(
            job("k.unique", json!("held"))
                .kind("u")
                .unique(held_rule.clone()),
        )
        .await?;
    complete(&q, "k.unique", held).await?;
    expect_state(&q, held, JobState::Completed).await?;
    let second = q
        .push_outcome(job("k.unique", json!("held")).kind("u").unique(held_rule))
        .await?;
    ensure!(
        !second.inserted() && second.id() == held,
        "a second push of a held unique job: {second:?}"
    );
    let live_rule = Unique::new()
        .by_args()
        .states([JobState::Pending, JobState::Running]);
    let free = q
        .push(
            job("k.unique", json!("free"))
                .kind("u")
                .unique(live_rule.clone()),
        )
        .await?;
    complete(&q, "k.unique", free).await?;
    ensure!(
        !exists(&q, free).await?,
        "a unique job of live states is still stored"
    );
    let second = q
        .push_outcome(job("k.unique", json!("free")).kind("u").unique(live_rule))
        .await?;
    ensure!(
        second.inserted() && second.id() != free,
        "a second push after the unique job was deleted: {second:?}"
    );
    let dead = make(&q, "k.dead", "k", JobState::Dead, 1).await?;
    expect_state(&q, dead[0], JobState::Dead).await?;
    // The worker's path (acknowledge and claim in one call where the backend can).
    let drained = many(&q, "k.worker", 30).await?;
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = ran.clone();
    let handle = Worker::builder(q.clone(), "k.worker")
        .concurrency(4)
        .prefetch(8)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(50))
        .handler_fn(move |_ctx| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }
        })
        .build()?
        .start();
    let gone = all_gone(&q, &drained, "the worker's completions deleted its jobs").await;
    handle.shutdown(Duration::from_secs(2)).await;
    gone?;
    let ran = ran.load(std::sync::atomic::Ordering::SeqCst);
    ensure!(ran == 30, "the handler ran {ran} times for 30 jobs");
    Ok(())
}

/// A database of the previous release's schema, holding jobs in every state, is migrated to
/// the current one (workers stopped meanwhile): every job reads back in its state, `stats`
/// counts them, a lease taken before the migration completes after it, `prune` finds the old
/// finished jobs per queue and state, and every job that can run does. The jobs are written by
/// the current statements, which run unchanged on the previous schema (the migration changes
/// the jobs table's indexes, not its rows).
pub async fn previous_schema_migrates_with_jobs_in_every_state(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.unmigrated_fixture().await?;
    if !fx.migrate_previous_schema().await? {
        return Err(
            ctx.skip("this backend's jobs table has not changed since the previous release")
        );
    }
    let q = fx.queue();
    let (queue, other) = ("schema-a", "schema-b");
    let pending = make(&q, queue, "old", JobState::Pending, 2).await?;
    let completed = make(&q, queue, "old", JobState::Completed, 3).await?;
    let dead = make(&q, queue, "old", JobState::Dead, 1).await?;
    let cancelled = make(&q, queue, "old", JobState::Cancelled, 1).await?;
    let other_completed = make(&q, other, "old", JobState::Completed, 2).await?;
    let scheduled = q
        .push(job(queue, json!("later")).delay(Duration::from_millis(500)))
        .await?;
    let flow = q
        .push_workflow(
            Workflow::new()
                .add("first", job(queue, json!("first")))
                .add_after("then", job(queue, json!("then")), ["first"]),
        )
        .await?;
    let waiting = flow.job("then").context("no step `then`")?;
    expect_state(&q, waiting, JobState::Waiting).await?;
    // A lease taken by a worker of the previous release before it stopped.
    let running = q
        .push(job(queue, json!("held")).kind("old").priority(100))
        .await?;
    let held = pop_one(&q, queue).await?;
    ensure!(
        held.job.id == running,
        "popped {} instead of {running}",
        held.job.id
    );

    let states: Vec<(JobId, JobState)> = pending
        .iter()
        .map(|id| (*id, JobState::Pending))
        .chain([(scheduled, JobState::Pending), (running, JobState::Running)])
        .chain(completed.iter().map(|id| (*id, JobState::Completed)))
        .chain(other_completed.iter().map(|id| (*id, JobState::Completed)))
        .chain([
            (dead[0], JobState::Dead),
            (cancelled[0], JobState::Cancelled),
            (waiting, JobState::Waiting),
        ])
        .collect();
    let mut before = Vec::with_capacity(states.len());
    for (id, state) in &states {
        before.push(super::row_fingerprint(
            &expect_state(&q, *id, *state).await?,
        ));
    }

    q.migrate().await?;

    // Every job reads back exactly as before: state, lease, times, history.
    for ((id, _), was) in states.iter().zip(&before) {
        let now = super::row_fingerprint(&super::get(&q, *id).await?);
        ensure!(&now == was, "{id} changed in the migration:\n{was}\n{now}");
    }
    let stats = q.stats(None).await?;
    let of = |name: &str| stats.iter().find(|s| s.queue == name).cloned();
    let a = of(queue).context("no stats of the first queue")?;
    // The scheduled job is due after half a second: by now it may count as available.
    ensure!(
        (a.available + a.scheduled, a.running, a.waiting) == (4, 1, 1)
            && a.scheduled <= 1
            && (a.completed, a.dead, a.cancelled) == (3, 1, 1),
        "{a:?}"
    );
    let b = of(other).context("no stats of the second queue")?;
    ensure!((b.completed, b.dead, b.cancelled) == (2, 0, 0), "{b:?}");
    let only = q.stats(Some(other)).await?;
    ensure!(
        only.len() == 1 && only[0].queue == other && only[0].completed == 2,
        "{only:?}"
    );

    // Pruning one queue's completed jobs leaves the other queue's and every other state.
    let pruned = q
        .prune(queue_core::PruneRequest {
            older_than: Duration::ZERO,
            states: vec![JobState::Completed],
            queue: Some(queue.into()),
        })
        .await?;
    ensure!(
        pruned == 3,
        "pruned {pruned} jobs of {queue}, not its 3 completed ones"
    );
    for id in &completed {
        ensure!(q.get(*id).await?.is_none(), "{id} was not pruned");
    }
    for id in &other_completed {
        expect_state(&q, *id, JobState::Completed).await?;
    }
    expect_state(&q, dead[0], JobState::Dead).await?;
    expect_state(&q, cancelled[0], JobState::Cancelled).await?;

    // The lease taken before the migration completes after it.
    q.ack(&held.lease).await?;
    expect_state(&q, running, JobState::Completed).await?;
    q.retry(dead[0]).await?;
    q.retry(cancelled[0]).await?;
    let handle = Worker::builder(q.clone(), queue)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(50))
        .handler_fn(|_| async { Ok(()) })
        .build()?
        .start();
    let run: Vec<JobId> = pending
        .iter()
        .copied()
        .chain([scheduled, dead[0], cancelled[0]])
        .chain(flow.jobs.iter().map(|(_, id)| *id))
        .collect();
    let done = super::eventually(Duration::from_secs(15), "every job ran", || {
        let (q, run) = (q.clone(), run.clone());
        async move {
            for id in &run {
                if super::get(&q, *id).await?.state != JobState::Completed {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        }
    })
    .await;
    handle.shutdown(Duration::from_secs(2)).await;
    done?;

    // Every completed job of every queue, pruned along the new index.
    let pruned = q
        .prune(queue_core::PruneRequest::older_than(Duration::ZERO))
        .await?;
    ensure!(
        pruned == (run.len() + 1 + other_completed.len()) as u64,
        "pruned {pruned}"
    );
    let left = super::all_jobs(&q).await?;
    ensure!(
        left.is_empty(),
        "left after pruning everything finished: {left:?}"
    );
    Ok(())
}
