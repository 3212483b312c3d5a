//! Workflows: dependencies promoted exactly once under concurrent finishers, the failure
//! policy, retries that reopen dependents, batches and their callbacks, chains, inserts inside
//! a caller's transaction, the sweep, and graphs refused before anything is stored.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use chrono::{DateTime, Utc};
use queue_core::{
    BatchCounts, Dep, DepPolicy, Error, Failure, JobId, JobState, Lease, NewJob, Queue, Workflow,
    WorkflowId, WorkflowListRequest,
};
use serde_json::json;

use super::{all_jobs, expect_state, get, job, pop, pop_one, LONG_LEASE, SHORT_LEASE};
use crate::Ctx;

/// How long a case waits for concurrent work to end before it fails.
const WITHIN: Duration = Duration::from_secs(60);

/// What the claimers saw: each job claimed, how often, and whether any was claimed while one
/// of the jobs it needs had not finished as it needs (read from the database when claimed).
#[derive(Default)]
struct Seen {
    claims: HashMap<JobId, u32>,
    early: Vec<String>,
}

/// `claimers` concurrent claimers on `queue`, alternating between two queue values (two
/// pools), each popping 1 to 4 jobs, checking in the database that every dependency of each is
/// resolved, recording the database's clock as the job's output (`{"started": micros}`) and
/// completing it, until `done` says so or [`WITHIN`] passed.
async fn claim_all(
    pools: [Arc<dyn Queue>; 2],
    queue: &'static str,
    claimers: usize,
    done: impl Fn(&Seen) -> bool + Send + Sync + 'static,
) -> anyhow::Result<Seen> {
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(done);
    let mut tasks = Vec::new();
    for c in 0..claimers {
        let q = pools[c % 2].clone();
        let (seen, stop, done) = (seen.clone(), stop.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let started = Instant::now();
            let worker = format!("claimer-{c}");
            while !stop.load(Ordering::SeqCst) {
                if started.elapsed() > WITHIN {
                    bail!("{worker}: the workflow did not finish within {WITHIN:?}");
                }
                let got = pop(&q, queue, 1 + c % 4, LONG_LEASE, &worker).await?;
                if got.is_empty() {
                    if done(&seen.lock().expect("seen")) {
                        stop.store(true, Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                for l in got {
                    let deps = q.dependencies(l.job.id).await?;
                    let now = q.now().await?;
                    {
                        let mut s = seen.lock().expect("seen");
                        *s.claims.entry(l.job.id).or_default() += 1;
                        for d in &deps {
                            let ok = d.state.is_none_or(|st| d.policy.resolved_by(st));
                            if !ok {
                                s.early.push(format!(
                                    "{} ran while its dependency {} was {:?}",
                                    l.job.id, d.step, d.state
                                ));
                            }
                        }
                    }
                    let output = serde_json::value::to_raw_value(
                        &json!({ "started": now.timestamp_micros() }),
                    )?;
                    q.ack_with_output(&l.lease, &output).await?;
                }
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let seen = std::mem::take(&mut *seen.lock().expect("seen"));
    Ok(seen)
}

/// The database time a job's handler recorded as its start.
fn started(job: &queue_core::Job) -> anyhow::Result<DateTime<Utc>> {
    let out: serde_json::Value = job
        .output::<serde_json::Value>()?
        .with_context(|| format!("job {} recorded no start", job.id))?;
    let micros = out["started"].as_i64().context("no started field")?;
    DateTime::from_timestamp_micros(micros).context("start out of range")
}

/// Twenty diamonds (a -> b, a -> c, b + c -> d) run by 16 claimers in two pools: each d runs
/// exactly once, after b and c completed, by the database's clock; and reads their outputs.
pub async fn workflow_diamond_runs_the_join_once_after_both(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    let mut diamonds = Vec::new();
    for i in 0..20 {
        let wf = Workflow::new()
            .name(format!("diamond-{i}"))
            .add("a", job("wf", json!({"d": i, "s": "a"})))
            .add_after("b", job("wf", json!({"d": i, "s": "b"})), ["a"])
            .add_after("c", job("wf", json!({"d": i, "s": "c"})), ["a"])
            .add_after("d", job("wf", json!({"d": i, "s": "d"})), ["b", "c"]);
        let pushed = q.push_workflow(wf).await?;
        ensure!(pushed.jobs.len() == 4);
        diamonds.push(pushed);
    }
    // Stored as pushed: a pending, the others waiting, with their workflow and step.
    let first = &diamonds[0];
    let a = expect_state(&q, first.job("a").context("a")?, JobState::Pending).await?;
    ensure!(a.workflow == Some(first.id) && a.step.as_deref() == Some("a"));
    let d = expect_state(&q, first.job("d").context("d")?, JobState::Waiting).await?;
    let mut deps: Vec<(String, DepPolicy)> = d
        .depends_on
        .iter()
        .map(|x| (x.step.clone(), x.policy))
        .collect();
    deps.sort_by(|x, y| x.0.cmp(&y.0));
    ensure!(
        deps == [
            ("b".to_owned(), DepPolicy::Completed),
            ("c".to_owned(), DepPolicy::Completed)
        ],
        "get shows d's dependencies as {deps:?}"
    );
    let stats = q.stats(Some("wf")).await?;
    ensure!(
        stats[0].waiting == 60 && stats[0].available == 20,
        "stats: {:?}",
        stats[0]
    );

    let total = diamonds.len() * 4;
    let seen = claim_all([q.clone(), q2.clone()], "wf", 16, move |s| {
        s.claims.len() >= total
    })
    .await?;
    ensure!(seen.early.is_empty(), "{:?}", seen.early);
    for pushed in &diamonds {
        for (step, id) in &pushed.jobs {
            let n = seen.claims.get(id).copied().unwrap_or(0);
            ensure!(n == 1, "step {step} of {} was claimed {n} times", pushed.id);
        }
        let [b, c, d] = ["b", "c", "d"].map(|s| pushed.job(s).expect("step"));
        let (b, c) = (
            expect_state(&q, b, JobState::Completed).await?,
            expect_state(&q, c, JobState::Completed).await?,
        );
        let d = expect_state(&q, d, JobState::Completed).await?;
        ensure!(d.attempts == 1, "d ran {} times", d.attempts);
        let d_start = started(&d)?;
        for dep in [&b, &c] {
            let finished = dep.finished_at.context("finished")?;
            ensure!(
                d_start >= finished,
                "d started at {d_start}, before its dependency finished at {finished}"
            );
        }
        // The results flow down: d reads what b and c recorded.
        let outputs = q.dependencies(d.id).await?;
        ensure!(outputs.len() == 2 && outputs.iter().all(|o| o.output.is_some()));
        let info = q.workflow(pushed.id).await?.context("workflow")?;
        ensure!(info.is_finished() && info.jobs.len() == 4);
    }
    Ok(())
}

/// A fan-in of 200 dependencies completed by 16 concurrent claimers in two pools (some in
/// batches) makes the dependent pending exactly once, and only after all 200 completed.
pub async fn workflow_fan_in_of_200_promotes_once(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    let mut wf = Workflow::new().name("fan-in");
    let mut names = Vec::new();
    for i in 0..200 {
        let name = format!("part-{i}");
        wf = wf.add(name.clone(), job("fan", json!({ "i": i })));
        names.push(name);
    }
    let wf = wf.add_after("join", job("fan", json!("join")), names);
    let pushed = q.push_workflow(wf).await?;
    let join = pushed.job("join").context("join")?;
    let seen = claim_all([q.clone(), q2.clone()], "fan", 16, move |s| {
        s.claims.contains_key(&join)
    })
    .await?;
    ensure!(seen.early.is_empty(), "{:?}", seen.early);
    ensure!(
        seen.claims.len() == 201,
        "{} jobs claimed",
        seen.claims.len()
    );
    ensure!(seen.claims.values().all(|n| *n == 1), "a job ran twice");
    let j = expect_state(&q, join, JobState::Completed).await?;
    ensure!(j.attempts == 1);
    let last_part = q.dependencies(join).await?.len();
    ensure!(last_part == 200);
    let info = q.workflow(pushed.id).await?.context("workflow")?;
    let latest = info
        .jobs
        .iter()
        .filter(|w| w.step != "join")
        .filter_map(|w| w.job.finished_at)
        .max()
        .context("finish times")?;
    ensure!(
        started(&j)? >= latest,
        "the join started before its last dependency finished"
    );
    Ok(())
}

/// A dead dependency cancels what needs it, naming it, down the graph; what runs anyway runs.
/// Retrying the dead job reopens what it cancelled, and the rest of the workflow then runs.
pub async fn workflow_failure_cancels_and_retry_reopens(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let wf = Workflow::new()
        .add("a", job("wff", json!("a")).max_attempts(1))
        .add_after("b", job("wff", json!("b")), ["a"])
        .add_after("c", job("wff", json!("c")), [Dep::on("a").run_anyway()])
        .add_after("e", job("wff", json!("e")), ["b"])
        .add_after("f", job("wff", json!("f")), [Dep::on("b").run_anyway()]);
    let p = q.push_workflow(wf).await?;
    let id = |s: &str| p.job(s).expect("step");
    let a = pop_one(&q, "wff").await?;
    ensure!(a.job.id == id("a") && a.lease.workflow == Some(p.id));
    q.fail(&a.lease, Failure::permanent("boom")).await?;
    expect_state(&q, id("a"), JobState::Dead).await?;
    let b = expect_state(&q, id("b"), JobState::Cancelled).await?;
    ensure!(
        b.blocked_by == Some(id("a")),
        "b blocked by {:?}",
        b.blocked_by
    );
    ensure!(b.finished_at.is_some());
    let e = expect_state(&q, id("e"), JobState::Cancelled).await?;
    ensure!(
        e.blocked_by == Some(id("b")),
        "e blocked by {:?}",
        e.blocked_by
    );
    // c runs anyway after a died; f runs anyway after b was cancelled.
    expect_state(&q, id("c"), JobState::Pending).await?;
    expect_state(&q, id("f"), JobState::Pending).await?;
    for _ in 0..2 {
        let l = pop_one(&q, "wff").await?;
        ensure!([id("c"), id("f")].contains(&l.job.id));
        q.ack(&l.lease).await?;
    }
    ensure!(pop(&q, "wff", 10, LONG_LEASE, "w").await?.is_empty());

    // The retry of a: b and e wait again; a completes, then b, then e.
    q.retry(id("a")).await?;
    let b = expect_state(&q, id("b"), JobState::Waiting).await?;
    ensure!(b.blocked_by.is_none() && b.finished_at.is_none());
    expect_state(&q, id("e"), JobState::Waiting).await?;
    for step in ["a", "b", "e"] {
        let l = pop_one(&q, "wff").await?;
        ensure!(
            l.job.id == id(step),
            "expected {step}, claimed {:?}",
            l.job.payload_value()
        );
        q.ack(&l.lease).await?;
    }
    for step in ["a", "b", "c", "e", "f"] {
        let j = expect_state(&q, id(step), JobState::Completed).await?;
        ensure!(j.blocked_by.is_none());
    }
    // f ran once (before the retry), not again.
    ensure!(get(&q, id("f")).await?.attempts == 1);
    ensure!(pop(&q, "wff", 10, LONG_LEASE, "w").await?.is_empty());
    Ok(())
}

/// Cancelling a waiting job, and a job others wait for, cancels down the graph; a job whose
/// dependency was cancelled by an operator is blocked by it.
pub async fn workflow_cancel_cascades(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let p = q
        .push_workflow(Workflow::chain((0..4).map(|i| job("wfc", json!(i)))))
        .await?;
    let id = |s: &str| p.job(s).expect("step");
    q.cancel(id("2")).await?;
    let two = expect_state(&q, id("2"), JobState::Cancelled).await?;
    ensure!(
        two.blocked_by.is_none(),
        "an operator's cancel names no blocker"
    );
    ensure!(get(&q, id("3")).await?.blocked_by == Some(id("2")));
    expect_state(&q, id("4"), JobState::Cancelled).await?;
    let one = pop_one(&q, "wfc").await?;
    ensure!(one.job.id == id("1"));
    q.ack(&one.lease).await?;
    ensure!(pop(&q, "wfc", 10, LONG_LEASE, "w").await?.is_empty());
    Ok(())
}

/// A chain runs one job at a time, in order.
pub async fn workflow_chain_runs_in_order(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let p = q
        .push_workflow(
            Workflow::new()
                .then("charge", job("wfl", json!("charge")))
                .then("ship", job("wfl", json!("ship")))
                .then("email", job("wfl", json!("email"))),
        )
        .await?;
    for step in ["charge", "ship", "email"] {
        let got = pop(&q, "wfl", 10, LONG_LEASE, "w").await?;
        ensure!(
            got.len() == 1,
            "{} jobs of a chain were due at once",
            got.len()
        );
        ensure!(got[0].job.id == p.job(step).expect("step"));
        q.ack_batch(&[got[0].lease.clone()]).await?;
    }
    ensure!(pop(&q, "wfl", 10, LONG_LEASE, "w").await?.is_empty());
    Ok(())
}

/// A batch's callback runs once every member finished, whatever its outcome, and reads the
/// counts: members completed, dead (one by a rescue after its holder died), cancelled, and
/// one completed by another claimer after the rescue of a dead holder's lease.
pub async fn workflow_batch_callback_counts_every_outcome(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let members = vec![
        job("wfb", json!("ok-1")),
        job("wfb", json!("ok-2")),
        job("wfb", json!("dies")).max_attempts(1),
        job("wfb", json!("abandoned-once")),
        job("wfb", json!("abandoned-last")).max_attempts(1),
        job("wfb", json!("cancelled")),
    ];
    let p = q
        .push_workflow(Workflow::batch(members, job("wfb-done", json!("callback"))))
        .await?;
    let callback = p.job("callback").context("callback")?;
    q.cancel(p.job("6").context("6")?).await?;
    let mut leases = HashMap::new();
    for l in pop(&q, "wfb", 10, LONG_LEASE, "w").await? {
        leases.insert(l.job.payload_value(), l.lease);
    }
    ensure!(leases.len() == 5, "claimed {:?}", leases.keys());
    let lease = |k: &str| leases.get(&json!(k)).cloned().context("lease");
    q.ack(&lease("ok-1")?).await?;
    q.ack_batch(&[lease("ok-2")?]).await?;
    q.fail(&lease("dies")?, Failure::permanent("no")).await?;
    ensure!(pop(&q, "wfb-done", 1, LONG_LEASE, "w").await?.is_empty());
    // The holders of the two "abandoned" members die: their leases expire; re-claim both
    // with a short lease, so the rescue finds them expired.
    for k in ["abandoned-once", "abandoned-last"] {
        q.extend(&lease(k)?, SHORT_LEASE).await?;
    }
    super::sleep_until_db(&q, q.now().await? + chrono::Duration::milliseconds(300)).await?;
    ensure!(q.rescue_expired().await? == 2);
    expect_state(&q, p.job("5").context("5")?, JobState::Dead).await?;
    expect_state(&q, callback, JobState::Waiting).await?;
    // Another claimer completes the rescued one: the last member, so the callback is due.
    let again = pop_one(&q, "wfb").await?;
    ensure!(again.job.payload_value() == json!("abandoned-once"));
    q.ack(&again.lease).await?;
    let cb = pop_one(&q, "wfb-done").await?;
    ensure!(cb.job.id == callback);
    let deps: Vec<queue_core::Dependency> = q.dependencies(callback).await?;
    let counts = BatchCounts::of(&deps);
    ensure!(
        counts
            == BatchCounts {
                completed: 3,
                dead: 2,
                cancelled: 1,
                other: 0
            },
        "{counts:?}"
    );
    q.ack(&cb.lease).await?;
    ensure!(pop(&q, "wfb-done", 1, LONG_LEASE, "w").await?.is_empty());
    Ok(())
}

/// An open batch takes members until sealed; its callback waits for the seal even when every
/// member has finished; a sealed batch refuses more, storing nothing.
pub async fn workflow_open_batch_waits_for_the_seal(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let p = q
        .push_workflow(Workflow::open_batch(job("wfo-done", json!("cb"))).name("import"))
        .await?;
    let callback = p.job("callback").context("callback")?;
    expect_state(&q, callback, JobState::Waiting).await?;
    let first = q
        .batch_add(p.id, (0..3).map(|i| job("wfo", json!(i))).collect())
        .await?;
    ensure!(first.len() == 3);
    for _ in 0..3 {
        let l = pop_one(&q, "wfo").await?;
        q.ack(&l.lease).await?;
    }
    q.settle_waiting().await?;
    expect_state(&q, callback, JobState::Waiting).await?;
    let second = q.batch_add(p.id, vec![job("wfo", json!(3))]).await?;
    q.batch_seal(p.id).await?;
    expect_state(&q, callback, JobState::Waiting).await?;
    match q.batch_seal(p.id).await {
        Err(Error::WorkflowSealed { workflow }) if workflow == p.id => {}
        other => bail!("a second seal: {other:?}"),
    }
    match q.batch_add(p.id, vec![job("wfo", json!("late"))]).await {
        Err(Error::WorkflowSealed { .. }) => {}
        other => bail!("an add after the seal: {other:?}"),
    }
    match q
        .batch_add(WorkflowId::new(), vec![job("wfo", json!("x"))])
        .await
    {
        Err(Error::UnknownWorkflow { .. }) => {}
        other => bail!("an add to no batch: {other:?}"),
    }
    let l = pop_one(&q, "wfo").await?;
    ensure!(l.job.id == second[0]);
    q.ack(&l.lease).await?;
    expect_state(&q, callback, JobState::Pending).await?;
    let deps = q.dependencies(callback).await?;
    ensure!(deps.len() == 4 && deps.iter().all(|d| d.policy == DepPolicy::AnyOutcome));
    let jobs = all_jobs(&q).await?;
    ensure!(
        jobs.len() == 5,
        "the refused adds stored something: {}",
        jobs.len()
    );
    // Sealing a batch whose members have all finished makes the callback due at once.
    let p2 = q
        .push_workflow(Workflow::open_batch(job("wfo-done", json!("cb2"))))
        .await?;
    q.batch_seal(p2.id).await?;
    expect_state(&q, p2.job("callback").context("cb")?, JobState::Pending).await?;
    Ok(())
}

/// A process that dies between a dependency's completion and its settling leaves the dependent
/// waiting; the sweep (which every worker runs with its rescue) makes it pending. A job
/// completed inside the caller's transaction is settled after its commit by
/// `settle_dependents`.
pub async fn workflow_sweep_settles_what_a_crash_left(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let p = q
        .push_workflow(
            Workflow::new()
                .add("a", job("wfs", json!("a")))
                .add("x", job("wfs", json!("x")).max_attempts(1))
                .add_after("b", job("wfs", json!("b")), ["a"])
                .add_after("y", job("wfs", json!("y")), ["x"]),
        )
        .await?;
    let id = |s: &str| p.job(s).expect("step");
    let got = pop(&q, "wfs", 2, LONG_LEASE, "w").await?;
    ensure!(got.len() == 2);
    for l in &got {
        // A lease without its workflow: the completion of a process that died before settling.
        let bare = Lease {
            workflow: None,
            ..l.lease.clone()
        };
        if l.job.id == id("a") {
            q.ack(&bare).await?;
        } else {
            q.fail(&bare, Failure::permanent("gone")).await?;
        }
    }
    expect_state(&q, id("b"), JobState::Waiting).await?;
    expect_state(&q, id("y"), JobState::Waiting).await?;
    ensure!(q.settle_waiting().await? == 2);
    expect_state(&q, id("b"), JobState::Pending).await?;
    let y = expect_state(&q, id("y"), JobState::Cancelled).await?;
    ensure!(y.blocked_by == Some(id("x")));
    ensure!(
        q.settle_waiting().await? == 0,
        "a second sweep changed something"
    );

    // Completing b inside the caller's transaction.
    let Some(tx) = fx.transactions() else {
        return Ok(());
    };
    let p = q
        .push_workflow(Workflow::chain([
            job("wft", json!(1)),
            job("wft", json!(2)),
        ]))
        .await?;
    let l = pop_one(&q, "wft").await?;
    tx.complete_in_tx(&l.lease, "wf-effect").await?;
    ensure!(tx.effects("wf-effect").await? == 1);
    // Not settled inside the caller's transaction: after its commit, by settle_dependents.
    let second = p.job("2").context("2")?;
    expect_state(&q, second, JobState::Waiting).await?;
    q.settle_dependents(&[l.job.id]).await?;
    expect_state(&q, second, JobState::Pending).await?;
    Ok(())
}

/// A workflow pushed inside the caller's transaction exists iff it commits; rolled back, it
/// leaves no job and no workflow.
pub async fn workflow_push_inside_a_transaction(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let Some(tx) = fx.transactions() else {
        return Err(ctx.skip("this backend offers no caller transactions"));
    };
    let q = fx.queue();
    let diamond = || {
        Workflow::new().add("a", job("wfx", json!("a"))).add_after(
            "b",
            job("wfx", json!("b")),
            ["a"],
        )
    };
    let gone = tx
        .push_workflow_in_tx(diamond(), "wf-rolled-back", false)
        .await?;
    ensure!(
        q.workflow(gone.id).await?.is_none(),
        "a rolled-back workflow is stored"
    );
    ensure!(
        all_jobs(&q).await?.is_empty(),
        "a rolled-back workflow's jobs are stored"
    );
    ensure!(tx.effects("wf-rolled-back").await? == 0);
    ensure!(q
        .workflows(WorkflowListRequest::default())
        .await?
        .is_empty());
    let kept = tx
        .push_workflow_in_tx(diamond(), "wf-committed", true)
        .await?;
    let info = q.workflow(kept.id).await?.context("committed workflow")?;
    ensure!(info.jobs.len() == 2 && tx.effects("wf-committed").await? == 1);
    let a = pop_one(&q, "wfx").await?;
    ensure!(a.job.id == kept.job("a").context("a")?);
    q.ack(&a.lease).await?;
    expect_state(&q, kept.job("b").context("b")?, JobState::Pending).await?;
    Ok(())
}

/// Cycles, unknown names, self-dependencies, empty workflows, duplicate names, dedup keys and
/// a workflow id pushed twice: a clear error naming the rule, and nothing stored.
pub async fn workflow_bad_graphs_store_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let j = || job("wfv", json!(1));
    let cases: Vec<(&str, Workflow, &str)> = vec![
        ("empty", Workflow::new(), "at least one step"),
        (
            "cycle",
            Workflow::new()
                .add_after("a", j(), ["c"])
                .add_after("b", j(), ["a"])
                .add_after("c", j(), ["b"]),
            "cycle",
        ),
        (
            "unknown",
            Workflow::new().add_after("a", j(), ["nope"]),
            "not a step",
        ),
        ("self", Workflow::new().add_after("a", j(), ["a"]), "itself"),
        (
            "twice",
            Workflow::new().add("a", j()).add("a", j()),
            "named twice",
        ),
        (
            "dedup",
            Workflow::new().add("a", j().dedup_key("k")),
            "dedup key",
        ),
        (
            "bad job",
            Workflow::new().add("a", j()).add("b", job("", json!(1))),
            "",
        ),
    ];
    for (what, wf, says) in cases {
        match q.push_workflow(wf).await {
            Err(Error::InvalidInput { field, rule, .. }) => ensure!(
                rule.contains(says),
                "{what}: the error ({field}: {rule}) does not say {says:?}"
            ),
            other => bail!("{what}: expected InvalidInput, got {other:?}"),
        }
    }
    ensure!(
        all_jobs(&q).await?.is_empty(),
        "a refused workflow stored jobs"
    );
    ensure!(q
        .workflows(WorkflowListRequest::default())
        .await?
        .is_empty());
    // The same id twice: the second push is refused as a whole.
    let id = WorkflowId::new();
    q.push_workflow(Workflow::new().with_id(id).add("a", j()))
        .await?;
    match q
        .push_workflow(Workflow::new().with_id(id).add("a", j()).add("b", j()))
        .await
    {
        Err(Error::WorkflowExists { workflow }) if workflow == id => {}
        other => bail!("a second push of one id: {other:?}"),
    }
    ensure!(
        all_jobs(&q).await?.len() == 1,
        "the refused push stored jobs"
    );
    let listed = q.workflows(WorkflowListRequest::default()).await?;
    ensure!(listed.len() == 1 && listed[0].id == id && listed[0].total() == 1);
    Ok(())
}

/// A job pushed alone is in no workflow, and its lease says so.
pub async fn workflow_plain_jobs_are_in_none(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(NewJob::new("wfp", &1)?).await?;
    let l = pop_one(&q, "wfp").await?;
    ensure!(l.lease.workflow.is_none() && l.job.workflow.is_none());
    q.ack(&l.lease).await?;
    let j = get(&q, id).await?;
    ensure!(j.workflow.is_none() && j.step.is_none() && j.depends_on.is_empty());
    ensure!(q.dependencies(id).await?.is_empty());
    Ok(())
}
