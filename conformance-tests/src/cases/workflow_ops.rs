//! Workflows under operators' actions: a retry, a cancel, a delete and retention each meet a
//! workflow from the side, and each keeps its rules: a step never runs before the jobs it
//! needs have finished as it needs, nothing a retry can revive (nor an output a waiting step
//! reads) is deleted, and nothing is left waiting or cancelled for ever.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use queue_core::{
    BatchCounts, BulkAction, Dep, Error, Failure, JobFilter, JobId, JobState, Queue, Retention,
    ServerKind, Workflow, WorkflowId,
};
use serde_json::json;

use super::{expect_cancelled, expect_state, get, job, pop, pop_one, sleep_until_db, LONG_LEASE};
use crate::Ctx;

/// Rules that delete every finished state after `age`, a round at most every second.
fn rules(age: Duration) -> Retention {
    Retention::off()
        .delete_after(JobState::Completed, age)
        .delete_after(JobState::Cancelled, age)
        .delete_after(JobState::Dead, age)
        .interval(Duration::from_secs(1))
}

/// Waits until the database's clock is `by` past now (so that what finished before is older
/// than `by`, and a round's interval of 1 s has passed).
async fn age(q: &Arc<dyn Queue>, by: Duration) -> anyhow::Result<()> {
    let now = q.now().await?;
    sleep_until_db(q, now + chrono::Duration::from_std(by)?).await
}

/// Runs one retention round (waiting out the interval of the previous one).
async fn round(
    q: &Arc<dyn Queue>,
    rules: &Retention,
) -> anyhow::Result<queue_core::RetentionReport> {
    for _ in 0..50 {
        if let Some(report) = q.run_retention(rules).await? {
            return Ok(report);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("no retention round could run")
}

/// Pops `queue` and fails unless exactly `expected` come out (in any order), completing them.
async fn run_exactly(q: &Arc<dyn Queue>, queue: &str, expected: &[JobId]) -> anyhow::Result<()> {
    let got = pop(q, queue, 10, LONG_LEASE, "op").await?;
    let mut ids: Vec<JobId> = got.iter().map(|l| l.job.id).collect();
    ids.sort();
    let mut want = expected.to_vec();
    want.sort();
    ensure!(ids == want, "{queue}: claimed {ids:?}, expected {want:?}");
    for l in got {
        q.ack(&l.lease).await?;
    }
    Ok(())
}

fn of_queue(queue: &str, state: Option<JobState>) -> JobFilter {
    JobFilter {
        queue: Some(queue.into()),
        state,
        ..JobFilter::default()
    }
}

/// A retried step whose dependencies have not finished waits for them (it is not claimable
/// until they complete), whether it was cancelled by an operator or through a dependency; one
/// whose dependency is still dead is refused, naming that dependency, and left as it was; a
/// bulk retry skips such steps and brings the others back waiting; a step whose dependencies
/// completed comes back pending at once.
pub async fn workflow_retry_of_a_step_waits_for_its_dependencies(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    // An operator cancels c while it waits on a, then retries it: c waits again.
    let p = q
        .push_workflow(Workflow::new().add("a", job("wr", json!("a"))).add_after(
            "c",
            job("wr", json!("c")),
            ["a"],
        ))
        .await?;
    let (a, c) = (p.job("a").context("a")?, p.job("c").context("c")?);
    q.cancel(c).await?;
    q.retry(c).await?;
    let cj = expect_state(&q, c, JobState::Waiting).await?;
    ensure!(cj.blocked_by.is_none() && cj.finished_at.is_none());
    run_exactly(&q, "wr", &[a]).await?;
    run_exactly(&q, "wr", &[c]).await?;

    // c cancelled because a died: a retry of c instead of a is refused, naming a.
    let p = q
        .push_workflow(
            Workflow::new()
                .add("a", job("wr2", json!("a")).max_attempts(1))
                .add_after("c", job("wr2", json!("c")), ["a"]),
        )
        .await?;
    let (a, c) = (p.job("a").context("a")?, p.job("c").context("c")?);
    let l = pop_one(&q, "wr2").await?;
    q.fail(&l.lease, Failure::permanent("boom")).await?;
    let before = expect_state(&q, c, JobState::Cancelled).await?;
    ensure!(before.blocked_by == Some(a));
    match q.retry(c).await {
        Err(Error::DependencyFailed {
            job,
            dependency,
            state,
        }) => ensure!(
            (job, dependency, state) == (c, a, Some(JobState::Dead)),
            "refused naming {job}, {dependency}, {state:?}"
        ),
        other => bail!("a retry of a step whose dependency is dead: {other:?}"),
    }
    let after = expect_state(&q, c, JobState::Cancelled).await?;
    ensure!(
        after.blocked_by == Some(a) && after.updated_at == before.updated_at,
        "a refused retry changed the step: {after:?}"
    );
    ensure!(pop(&q, "wr2", 10, LONG_LEASE, "op").await?.is_empty());

    // A bulk retry of every cancelled job of a queue: the step waiting on a pending job comes
    // back waiting, the one blocked by a dead job is skipped, a plain job comes back pending.
    let p = q
        .push_workflow(
            Workflow::new()
                .add("x", job("wr3-x", json!("x")))
                .add_after("y", job("wr3", json!("y")), ["x"]),
        )
        .await?;
    let (x, y) = (p.job("x").context("x")?, p.job("y").context("y")?);
    q.cancel(y).await?;
    let p2 = q
        .push_workflow(
            Workflow::new()
                .add("d", job("wr3-x", json!("d")).max_attempts(1))
                .add_after("z", job("wr3", json!("z")), ["d"]),
        )
        .await?;
    let (d, z) = (p2.job("d").context("d")?, p2.job("z").context("z")?);
    let plain = q.push(job("wr3", json!("plain"))).await?;
    q.cancel(plain).await?;
    let dl = pop(&q, "wr3-x", 10, LONG_LEASE, "op").await?;
    let mut x_lease = None;
    for l in dl {
        if l.job.id == d {
            q.fail(&l.lease, Failure::permanent("boom")).await?;
        } else {
            x_lease = Some(l.lease);
        }
    }
    let x_lease = x_lease.context("x was not claimed")?;
    expect_state(&q, z, JobState::Cancelled).await?;
    let out = q
        .bulk(
            BulkAction::Retry,
            &of_queue("wr3", Some(JobState::Cancelled)),
        )
        .await?;
    ensure!((out.changed, out.skipped) == (2, 1), "bulk retry: {out:?}");
    expect_state(&q, y, JobState::Waiting).await?;
    expect_state(&q, z, JobState::Cancelled).await?;
    expect_state(&q, plain, JobState::Pending).await?;
    run_exactly(&q, "wr3", &[plain]).await?;
    q.ack(&x_lease).await?;
    expect_state(&q, x, JobState::Completed).await?;
    run_exactly(&q, "wr3", &[y]).await?;

    // A step whose dependency completed, cancelled by an operator: back pending at once.
    let p = q
        .push_workflow(
            Workflow::new()
                .add("a", job("wr4", json!("a")))
                .add_after("b", job("wr4", json!("b")), ["a"])
                .add_after("c", job("wr4-c", json!("c")), ["b"]),
        )
        .await?;
    let (a, b, c) = (
        p.job("a").context("a")?,
        p.job("b").context("b")?,
        p.job("c").context("c")?,
    );
    run_exactly(&q, "wr4", &[a]).await?;
    q.cancel(b).await?;
    let cj = expect_state(&q, c, JobState::Cancelled).await?;
    ensure!(cj.blocked_by == Some(b));
    q.retry(b).await?;
    expect_state(&q, b, JobState::Pending).await?;
    // Its own dependents, cancelled through it, wait again.
    expect_state(&q, c, JobState::Waiting).await?;
    run_exactly(&q, "wr4", &[b]).await?;
    run_exactly(&q, "wr4-c", &[c]).await?;
    Ok(())
}

/// Retention keeps a workflow's jobs while any of them can be revived: a step cancelled
/// because its dependency died stays as long as the dead dependency does (dead jobs are kept
/// longer), so a later retry of the dependency runs it; once every job of the workflow has
/// finished longer than its state's age, the whole workflow goes at once.
pub async fn workflow_retention_keeps_steps_a_retry_can_revive(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    super::seconds_of_retention(&ctx, &*fx)?;
    let q = fx.queue();
    let p = q
        .push_workflow(
            Workflow::new()
                .add("a", job("rk", json!("a")).max_attempts(1))
                .add_after("b", job("rk", json!("b")), ["a"]),
        )
        .await?;
    let (a, b) = (p.job("a").context("a")?, p.job("b").context("b")?);
    let l = pop_one(&q, "rk").await?;
    q.fail(&l.lease, Failure::permanent("boom")).await?;
    expect_state(&q, b, JobState::Cancelled).await?;
    // A plain cancelled job of the same age goes; the cancelled step does not: the dead job it
    // needs is kept for an hour, and a retry of it would bring the step back.
    let plain = q.push(job("rk", json!("plain"))).await?;
    q.cancel(plain).await?;
    age(&q, Duration::from_millis(1500)).await?;
    let keep_dead = Retention::off()
        .delete_after(JobState::Cancelled, Duration::from_secs(1))
        .delete_after(JobState::Dead, Duration::from_secs(3600))
        .interval(Duration::from_secs(1));
    let report = round(&q, &keep_dead).await?;
    ensure!(
        (report.cancelled, report.workflows, report.workflow_jobs) == (1, 0, 0),
        "{report:?}"
    );
    ensure!(q.get(plain).await?.is_none(), "the plain job was kept");
    expect_state(&q, b, JobState::Cancelled).await?;
    ensure!(q.workflow(p.id).await?.is_some());
    // The operator's prune of every finished job older than a second keeps the step too.
    let pruned = q
        .prune(queue_core::PruneRequest {
            older_than: Duration::from_secs(1),
            states: vec![JobState::Cancelled],
            queue: None,
        })
        .await?;
    ensure!(pruned == 0, "prune deleted {pruned}");
    expect_state(&q, b, JobState::Cancelled).await?;

    // The retry of a revives b.
    q.retry(a).await?;
    expect_state(&q, b, JobState::Waiting).await?;
    run_exactly(&q, "rk", &[a]).await?;
    run_exactly(&q, "rk", &[b]).await?;

    // Both completed and old: the workflow goes as a whole, with its jobs.
    age(&q, Duration::from_millis(1500)).await?;
    let report = round(&q, &rules(Duration::from_secs(1))).await?;
    ensure!(
        (report.workflows, report.workflow_jobs, report.completed) == (1, 2, 0),
        "{report:?}"
    );
    ensure!(q.workflow(p.id).await?.is_none());
    ensure!(q.get(a).await?.is_none() && q.get(b).await?.is_none());
    Ok(())
}

/// Retention keeps a completed dependency (and its output) while a step that needs it still
/// waits: for another, delayed dependency, or for the seal of an open batch; the step then
/// reads every output and the batch's callback counts every member.
pub async fn workflow_retention_keeps_outputs_a_waiting_step_needs(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    super::seconds_of_retention(&ctx, &*fx)?;
    let q = fx.queue();
    let p = q
        .push_workflow(
            Workflow::new()
                .add("a", job("ro", json!("a")))
                .add(
                    "late",
                    job("ro-late", json!("late")).delay(Duration::from_secs(2)),
                )
                .add_after("join", job("ro-join", json!("join")), ["a", "late"]),
        )
        .await?;
    let (a, late, join) = (
        p.job("a").context("a")?,
        p.job("late").context("late")?,
        p.job("join").context("join")?,
    );
    let l = pop_one(&q, "ro").await?;
    ensure!(l.job.id == a);
    let output = serde_json::value::to_raw_value(&json!({"rows": 7}))?;
    q.ack_with_output(&l.lease, &output).await?;
    // An open batch whose one member completes long before the seal.
    let batch = q
        .push_workflow(Workflow::open_batch(job("ro-cb", json!("cb"))))
        .await?;
    let member = q.batch_add(batch.id, vec![job("ro-m", json!("m"))]).await?[0];
    run_exactly(&q, "ro-m", &[member]).await?;
    age(&q, Duration::from_millis(1500)).await?;
    let report = round(&q, &rules(Duration::from_secs(1))).await?;
    ensure!(
        (report.total(), report.workflows) == (0, 0),
        "retention deleted what a waiting step needs: {report:?}"
    );
    let deps = q.dependencies(join).await?;
    let of_a = deps.iter().find(|d| d.id == a).context("a")?;
    ensure!(
        of_a.state == Some(JobState::Completed) && of_a.output.is_some(),
        "the join's dependency a: {of_a:?}"
    );
    // The delayed dependency runs; the join reads a's output.
    age(&q, Duration::from_millis(600)).await?;
    run_exactly(&q, "ro-late", &[late]).await?;
    let jl = pop_one(&q, "ro-join").await?;
    ensure!(jl.job.id == join);
    let deps = q.dependencies(join).await?;
    let out: Option<serde_json::Value> = deps
        .iter()
        .find(|d| d.id == a)
        .and_then(|d| d.output.as_deref())
        .map(|o| serde_json::from_str(o.get()))
        .transpose()?;
    ensure!(out == Some(json!({"rows": 7})), "a's output: {out:?}");
    q.ack(&jl.lease).await?;
    // The batch is sealed after its member's age passed: the callback counts it completed.
    q.batch_seal(batch.id).await?;
    let cb = pop_one(&q, "ro-cb").await?;
    let counts = BatchCounts::of(&q.dependencies(cb.job.id).await?);
    ensure!(
        counts
            == BatchCounts {
                completed: 1,
                ..BatchCounts::default()
            },
        "{counts:?}"
    );
    q.ack(&cb.lease).await?;
    Ok(())
}

/// A retry interrupted after it brought a dependency back but before it reopened the step
/// that dependency's failure cancelled leaves nothing stuck: the retry changes everything or
/// nothing, and once the fault is gone a retry brings back both, and the step runs after its
/// dependency.
pub async fn workflow_interrupted_retry_heals(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let p = q
        .push_workflow(
            Workflow::new()
                .add("a", job("ri", json!("a")).max_attempts(1))
                .add_after("c", job("ri", json!("c")), ["a"]),
        )
        .await?;
    let (a, c) = (p.job("a").context("a")?, p.job("c").context("c")?);
    let l = pop_one(&q, "ri").await?;
    q.fail(&l.lease, Failure::permanent("boom")).await?;
    expect_state(&q, c, JobState::Cancelled).await?;
    if !fx.break_reopen(c).await? {
        return Err(ctx.skip("the backend cannot fail a statement in the middle of a retry"));
    }
    let first = q.retry(a).await;
    fx.mend().await?;
    // The sweep every worker runs settles what it can.
    q.settle_waiting().await?;
    let (aj, cj) = (get(&q, a).await?, get(&q, c).await?);
    match first {
        // The retry failed as a whole: nothing changed.
        Err(_) => ensure!(
            aj.state == JobState::Dead
                && cj.state == JobState::Cancelled
                && cj.blocked_by == Some(a),
            "a failed retry left a {} and c {} blocked by {:?}",
            aj.state,
            cj.state,
            cj.blocked_by
        ),
        Ok(()) => ensure!(
            aj.state == JobState::Pending && cj.state == JobState::Waiting,
            "a retry that reported success left a {} and c {} blocked by {:?}",
            aj.state,
            cj.state,
            cj.blocked_by
        ),
    }
    if aj.state == JobState::Dead {
        q.retry(a).await?;
    }
    expect_state(&q, c, JobState::Waiting).await?;
    run_exactly(&q, "ri", &[a]).await?;
    run_exactly(&q, "ri", &[c]).await?;
    Ok(())
}

/// A retry of a dead dependency that commits while the settling of its death is deciding to
/// cancel a step that needs it (the settling held up by a lock on the step's row): the step
/// ends waiting for the retried dependency, never cancelled behind a pending one, and runs
/// once its dependency completed.
pub async fn workflow_block_and_retry_race(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let p = q
        .push_workflow(
            Workflow::new()
                .add("a", job("rb", json!("a")).max_attempts(1))
                .add_after("c", job("rb", json!("c")), ["a"]),
        )
        .await?;
    let (a, c) = (p.job("a").context("a")?, p.job("c").context("c")?);
    let l = pop_one(&q, "rb").await?;
    // Another transaction holds c's row: the settling after a's death waits for it, having
    // read a dead.
    let Some(held) = fx.lock_job(c).await? else {
        return Err(ctx.skip("the backend cannot hold a job's row from another transaction"));
    };
    let failing = {
        let q = q.clone();
        let lease = l.lease.clone();
        tokio::spawn(async move { q.fail(&lease, Failure::permanent("boom")).await })
    };
    let q2 = fx.another().await?;
    // Wait until a's death is committed, read through another pool. Where the database has
    // one write lock (SQLite, the in-memory store: there a read waits for it too), the failure
    // itself waits for the lock, a's death is never seen here, and what follows runs in some
    // serial order. Elsewhere the death must be seen, or the race was not run.
    let single_writer = matches!(
        q.capabilities().profile.server,
        ServerKind::Sqlite | ServerKind::Memory
    );
    let (wait, read_timeout) = if single_writer {
        (Duration::from_secs(2), Duration::from_millis(50))
    } else {
        (Duration::from_secs(20), Duration::from_secs(2))
    };
    let waiting = std::time::Instant::now();
    let mut dead = false;
    while waiting.elapsed() < wait {
        let read = tokio::time::timeout(read_timeout, q2.get(a)).await;
        if let Ok(job) = read {
            if job?.is_some_and(|j| j.state == JobState::Dead) {
                dead = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if !dead && !single_writer {
        held.release().await?;
        failing.await??;
        // PostgreSQL's and InnoDB's reads never wait for a row lock: there the race must run.
        let server = q.capabilities().profile.server;
        ensure!(
            !matches!(
                server,
                ServerKind::Postgres | ServerKind::MySql | ServerKind::MariaDb
            ),
            "a's death was not seen committed within {wait:?}: the race was not run"
        );
        return Err(ctx.skip(
            "a's death was not visible to another connection while the settling held a row \
             lock (reads wait for it here), so the race cannot be set up",
        ));
    }
    // Time for the settling to read a dead and reach c's lock.
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The retry of a, meanwhile.
    let retrying = {
        let q = q2.clone();
        tokio::spawn(async move { q.retry(a).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    held.release().await?;
    failing.await??;
    match retrying.await? {
        Ok(()) => {}
        // The serial order on a single writer: the retry ran before the failure.
        Err(Error::InvalidState { .. }) if !dead => q.retry(a).await?,
        Err(e) => return Err(e.into()),
    }
    q.settle_waiting().await?;
    expect_state(&q, a, JobState::Pending).await?;
    let cj = get(&q, c).await?;
    ensure!(
        cj.state == JobState::Waiting && cj.blocked_by.is_none(),
        "c is {} blocked by {:?} while a is pending",
        cj.state,
        cj.blocked_by
    );
    run_exactly(&q, "rb", &[a]).await?;
    run_exactly(&q, "rb", &[c]).await?;
    Ok(())
}

/// Deleting a job that others need to complete cancels them, naming it (and those waiting on
/// them in turn), in another queue too; a step that runs anyway runs; the confirmation counts
/// the steps the delete cancels; a retry of a cancelled step is refused, naming the deleted
/// job; the sweep cancels a step whose dependency was deleted without its settling.
pub async fn workflow_deleting_a_dependency_cancels_its_dependents(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let p = q
        .push_workflow(
            Workflow::new()
                .add("a", job("rd-a", json!("a")))
                .add_after("c", job("rd", json!("c")), ["a"])
                .add_after("e", job("rd", json!("e")), ["c"])
                .add_after("f", job("rd", json!("f")), [Dep::on("a").run_anyway()]),
        )
        .await?;
    let id = |s: &str| p.job(s).expect("step");
    let filter = of_queue("rd-a", Some(JobState::Pending));
    ensure!(q.count_matching(BulkAction::Delete, &filter).await? == 1);
    let n = q.count_dependents(BulkAction::Delete, &filter).await?;
    ensure!(n == 1, "the delete would cancel {n} steps");
    ensure!(
        q.count_dependents(BulkAction::Retry, &of_queue("rd-a", None))
            .await?
            == 0
    );
    let out = q.bulk(BulkAction::Delete, &filter).await?;
    ensure!(out.changed == 1, "{out:?}");
    ensure!(q.get(id("a")).await?.is_none());
    let c = expect_state(&q, id("c"), JobState::Cancelled).await?;
    ensure!(
        c.blocked_by == Some(id("a")),
        "c blocked by {:?}",
        c.blocked_by
    );
    let e = expect_state(&q, id("e"), JobState::Cancelled).await?;
    ensure!(e.blocked_by == Some(id("c")));
    expect_state(&q, id("f"), JobState::Pending).await?;
    run_exactly(&q, "rd", &[id("f")]).await?;
    match q.retry(id("c")).await {
        Err(Error::DependencyFailed {
            dependency, state, ..
        }) => ensure!(
            dependency == id("a") && state.is_none(),
            "refused naming {dependency} ({state:?})"
        ),
        other => bail!("a retry of a step whose dependency was deleted: {other:?}"),
    }
    expect_state(&q, id("c"), JobState::Cancelled).await?;

    // A delete whose settling never ran (a process that died right after it): the sweep
    // cancels the step, which never runs.
    let p = q
        .push_workflow(
            Workflow::new()
                .add("a", job("rd2-a", json!("a")))
                .add("b", job("rd2-b", json!("b")))
                .add_after("c", job("rd2", json!("c")), ["a", "b"]),
        )
        .await?;
    let id = |s: &str| p.job(s).expect("step");
    let out = q.bulk(BulkAction::Delete, &of_queue("rd2-a", None)).await?;
    ensure!(out.changed == 1);
    // b completes after the delete (its settling sees a gone): c is cancelled, not promoted.
    run_exactly(&q, "rd2-b", &[id("b")]).await?;
    q.settle_waiting().await?;
    let c = expect_state(&q, id("c"), JobState::Cancelled).await?;
    ensure!(c.blocked_by == Some(id("a")));
    ensure!(pop(&q, "rd2", 10, LONG_LEASE, "op").await?.is_empty());
    Ok(())
}

/// Workflows with ids that are not time-ordered (a UUID v4 or v5 chosen as an idempotency
/// key, the greatest UUID) are deleted by retention once their jobs are old enough, as those
/// with time-ordered ids are.
pub async fn workflow_retention_prunes_workflows_of_any_id(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    super::seconds_of_retention(&ctx, &*fx)?;
    let q = fx.queue();
    let ids = [
        WorkflowId(uuid::Uuid::max()),
        WorkflowId(uuid::Uuid::from_u128(
            0xffff_0000_0000_4000_8000_0000_0000_0001,
        )),
        WorkflowId(uuid::Uuid::new_v4()),
        WorkflowId::new(),
    ];
    for (i, id) in ids.iter().enumerate() {
        q.push_workflow(
            Workflow::new()
                .with_id(*id)
                .add("only", job("ra", json!(i))),
        )
        .await?;
    }
    for _ in 0..ids.len() {
        let l = pop_one(&q, "ra").await?;
        q.ack(&l.lease).await?;
    }
    age(&q, Duration::from_millis(1500)).await?;
    let report = round(&q, &rules(Duration::from_secs(1))).await?;
    ensure!(
        (report.workflows, report.workflow_jobs) == (4, 4),
        "{report:?}"
    );
    for id in ids {
        ensure!(q.workflow(id).await?.is_none(), "workflow {id} was kept");
    }
    Ok(())
}

/// Cancelling a running dependency settles at once: its run-anyway dependents and a batch's
/// callback become due while the cancelled job's holder may still be running it (until it
/// notices, at its next transition, which is refused).
pub async fn workflow_cancelling_a_running_dependency_settles_at_once(
    ctx: Ctx,
) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let p = q
        .push_workflow(
            Workflow::new()
                .add("a", job("rc", json!("a")))
                .add_after(
                    "after",
                    job("rc-next", json!("after")),
                    [Dep::on("a").run_anyway()],
                )
                .add_after("needs", job("rc-next", json!("needs")), ["a"]),
        )
        .await?;
    let id = |s: &str| p.job(s).expect("step");
    let running = pop_one(&q, "rc").await?;
    q.cancel(id("a")).await?;
    expect_state(&q, id("after"), JobState::Pending).await?;
    let needs = expect_state(&q, id("needs"), JobState::Cancelled).await?;
    ensure!(needs.blocked_by == Some(id("a")));
    expect_cancelled("the late completion", id("a"), q.ack(&running.lease).await)?;
    expect_state(&q, id("a"), JobState::Cancelled).await?;
    run_exactly(&q, "rc-next", &[id("after")]).await?;
    Ok(())
}
