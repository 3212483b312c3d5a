//! Unique jobs: a push that meets the job holding its key stores nothing and reports that job;
//! the database decides (a unique index over the rows holding their place), so pushes that race
//! never both insert. Each case counts what the database stores.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use queue_core::{
    Error, Failure, JobArgs, JobId, JobState, KindOptions, ListRequest, NewJob, PushOutcome, Queue,
    Unique,
};
use serde_json::json;

use super::{expect_state, get, invalid_field, job, pop, pop_one, LONG_LEASE};
use crate::Ctx;

/// Every job of `queue` the database holds.
async fn jobs_of(q: &Arc<dyn Queue>, queue: &str) -> anyhow::Result<Vec<queue_core::Job>> {
    Ok(q.list(ListRequest {
        queue: Some(queue.into()),
        limit: 1000,
        ..ListRequest::default()
    })
    .await?)
}

fn ujob(queue: &str, payload: serde_json::Value, rule: Unique) -> NewJob {
    job(queue, payload).kind("sync").unique(rule)
}

/// 64 pushers of the same unique job at once, on two queue values (two pools, as two
/// processes): the database holds exactly one row, every pusher is told its id, and exactly
/// one of them inserted it.
pub async fn unique_concurrent_pushers_store_one_job(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    let rule = Unique::new().by_args();
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let qv = if i % 2 == 0 { q.clone() } else { q2.clone() };
            let rule = rule.clone();
            tokio::spawn(async move {
                qv.push_outcome(ujob("u.race", json!({"account": 42}), rule))
                    .await
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await??);
    }
    let ids: HashSet<JobId> = outcomes.iter().map(PushOutcome::id).collect();
    ensure!(
        ids.len() == 1,
        "pushers were told {} ids: {ids:?}",
        ids.len()
    );
    let inserted = outcomes.iter().filter(|o| o.inserted()).count();
    ensure!(inserted == 1, "{inserted} pushers inserted");
    let stored = jobs_of(&q, "u.race").await?;
    ensure!(
        stored.len() == 1 && ids.contains(&stored[0].id),
        "the database holds {} jobs: {stored:?}",
        stored.len()
    );
    Ok(())
}

/// The args are compared canonically: the same object in another key order or spacing meets
/// the job; other args do not; fields pick only what they name; the queue is part of the key
/// only when asked.
pub async fn unique_args_are_canonical(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let rule = Unique::new().by_args();
    let first = q
        .push_outcome(
            NewJob::from_json("u.args", r#"{"b": [1, 2], "a": {"y": 1, "x": 2}}"#)?
                .kind("sync")
                .unique(rule.clone()),
        )
        .await?;
    ensure!(first.inserted());
    let same = q
        .push_outcome(
            NewJob::from_json("u.args", "{\"a\":{\"x\":2,\"y\":1},\n  \"b\":[1,2]}")?
                .kind("sync")
                .unique(rule.clone()),
        )
        .await?;
    ensure!(
        same == PushOutcome::Existing(first.id()),
        "the same args in another order: {same:?}"
    );
    let other = q
        .push_outcome(
            NewJob::from_json("u.args", r#"{"b": [2, 1], "a": {"y": 1, "x": 2}}"#)?
                .kind("sync")
                .unique(rule.clone()),
        )
        .await?;
    ensure!(other.inserted(), "other args: {other:?}");
    // Another queue: the same job unless the rule takes the queue.
    let elsewhere = q
        .push_outcome(
            NewJob::from_json("u.args2", r#"{"a": {"x": 2, "y": 1}, "b": [1, 2]}"#)?
                .kind("sync")
                .unique(rule.clone()),
        )
        .await?;
    ensure!(
        elsewhere == PushOutcome::Existing(first.id()),
        "{elsewhere:?}"
    );
    let by_queue = q
        .push_outcome(
            NewJob::from_json("u.args2", r#"{"a": {"x": 2, "y": 1}, "b": [1, 2]}"#)?
                .kind("sync")
                .unique(rule.by_queue()),
        )
        .await?;
    ensure!(by_queue.inserted(), "{by_queue:?}");
    // Fields: only the named ones count.
    let fields = Unique::new().by_fields(["customer"]);
    let a = q
        .push_outcome(ujob("u.f", json!({"customer": 7, "n": 1}), fields.clone()))
        .await?;
    let b = q
        .push_outcome(ujob("u.f", json!({"n": 2, "customer": 7}), fields.clone()))
        .await?;
    let c = q
        .push_outcome(ujob("u.f", json!({"customer": 8, "n": 1}), fields))
        .await?;
    ensure!(a.inserted() && b == PushOutcome::Existing(a.id()) && c.inserted());
    // Another kind is another job, unless the rule takes any kind.
    let other_kind = q
        .push_outcome(
            job("u.f", json!({"customer": 7}))
                .kind("other")
                .unique(Unique::new().by_fields(["customer"])),
        )
        .await?;
    ensure!(other_kind.inserted());
    ensure!(jobs_of(&q, "u.args").await?.len() == 2);
    ensure!(jobs_of(&q, "u.args2").await?.len() == 1);
    ensure!(jobs_of(&q, "u.f").await?.len() == 3);
    Ok(())
}

/// The state set decides how long a job holds its key: by default (pending, running,
/// completed) a completed job still holds it and a dead or cancelled one frees it; a rule
/// without completed frees it at completion; one with dead holds it while dead.
pub async fn unique_states_decide_how_long_a_key_is_held(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    // Default: held while pending, running and completed.
    let rule = Unique::new().by_args();
    let a = q.push_outcome(ujob("u.s", json!(1), rule.clone())).await?;
    let l = pop_one(&q, "u.s").await?;
    let again = q.push_outcome(ujob("u.s", json!(1), rule.clone())).await?;
    ensure!(
        again == PushOutcome::Existing(a.id()),
        "while running: {again:?}"
    );
    q.ack(&l.lease).await?;
    let again = q.push_outcome(ujob("u.s", json!(1), rule.clone())).await?;
    ensure!(
        again == PushOutcome::Existing(a.id()),
        "completed: {again:?}"
    );
    // A dead job frees its key by default.
    let b = q.push_outcome(ujob("u.s", json!(2), rule.clone())).await?;
    let l = pop_one(&q, "u.s").await?;
    ensure!(l.job.id == b.id());
    q.fail(&l.lease, Failure::permanent("x")).await?;
    let again = q.push_outcome(ujob("u.s", json!(2), rule.clone())).await?;
    ensure!(again.inserted(), "after dead: {again:?}");
    // A cancelled one too.
    q.cancel(again.id()).await?;
    let after_cancel = q.push_outcome(ujob("u.s", json!(2), rule.clone())).await?;
    ensure!(after_cancel.inserted(), "after cancel: {after_cancel:?}");
    // Without completed: freed at completion.
    let live = Unique::new()
        .by_args()
        .states([JobState::Pending, JobState::Running]);
    let c = q.push_outcome(ujob("u.s2", json!(3), live.clone())).await?;
    q.ack(&pop_one(&q, "u.s2").await?.lease).await?;
    expect_state(&q, c.id(), JobState::Completed).await?;
    let again = q.push_outcome(ujob("u.s2", json!(3), live)).await?;
    ensure!(again.inserted(), "without completed: {again:?}");
    // With dead: held while dead.
    let keep_dead =
        Unique::new()
            .by_args()
            .states([JobState::Pending, JobState::Running, JobState::Dead]);
    let d = q
        .push_outcome(ujob("u.s3", json!(4), keep_dead.clone()))
        .await?;
    let l = pop_one(&q, "u.s3").await?;
    q.fail(&l.lease, Failure::permanent("x")).await?;
    let again = q.push_outcome(ujob("u.s3", json!(4), keep_dead)).await?;
    ensure!(
        again == PushOutcome::Existing(d.id()),
        "dead held: {again:?}"
    );
    ensure!(jobs_of(&q, "u.s").await?.len() == 4);
    ensure!(jobs_of(&q, "u.s2").await?.len() == 2);
    ensure!(jobs_of(&q, "u.s3").await?.len() == 1);
    Ok(())
}

/// A period puts the window the job is due in into the key: "once per window, even after
/// completion" is completed in the states plus a period; a job due in the next window is
/// another job.
pub async fn unique_periods_are_windows(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let day = Duration::from_secs(24 * 3600);
    let rule = Unique::new().by_args().by_period(day);
    let noon = chrono::Utc::now()
        .date_naive()
        .and_hms_opt(12, 0, 0)
        .context("noon")?
        .and_utc();
    let at =
        |t: chrono::DateTime<chrono::Utc>| ujob("u.p", json!("report"), rule.clone()).run_at(t);
    let today = q.push_outcome(at(noon - chrono::Duration::days(1))).await?;
    ensure!(today.inserted());
    // Completed, and pushed again for the same day: met.
    q.ack(&pop_one(&q, "u.p").await?.lease).await?;
    let same_day = q
        .push_outcome(at(
            noon - chrono::Duration::days(1) + chrono::Duration::hours(5)
        ))
        .await?;
    ensure!(
        same_day == PushOutcome::Existing(today.id()),
        "the same window: {same_day:?}"
    );
    // The next day's window: a new job.
    let tomorrow = q.push_outcome(at(noon)).await?;
    ensure!(tomorrow.inserted(), "the next window: {tomorrow:?}");
    ensure!(jobs_of(&q, "u.p").await?.len() == 2);
    Ok(())
}

/// A batch gives each job its own outcome and stores the others; two jobs of the batch with one
/// key: the first is stored, the second meets it; nothing is refused as a whole.
pub async fn unique_batch_outcomes_per_job(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let rule = Unique::new().by_args();
    let held = q
        .push_outcome(ujob("u.b", json!("held"), rule.clone()))
        .await?;
    let batch = vec![
        ujob("u.b", json!("new"), rule.clone()),
        job("u.b", json!("plain")),
        ujob("u.b", json!("new"), rule.clone()),
        ujob("u.b", json!("held"), rule.clone()),
        job("u.b", json!("plain")),
    ];
    let ids: Vec<JobId> = batch.iter().map(NewJob::id).collect();
    let outcomes = q.push_batch_outcomes(batch).await?;
    let want = vec![
        PushOutcome::Inserted(ids[0]),
        PushOutcome::Inserted(ids[1]),
        PushOutcome::Existing(ids[0]),
        PushOutcome::Existing(held.id()),
        PushOutcome::Inserted(ids[4]),
    ];
    ensure!(outcomes == want, "outcomes {outcomes:?}");
    let stored: HashSet<JobId> = jobs_of(&q, "u.b").await?.iter().map(|j| j.id).collect();
    let want_stored: HashSet<JobId> = [held.id(), ids[0], ids[1], ids[4]].into();
    ensure!(stored == want_stored, "stored {stored:?}");
    // push_batch says the same with ids.
    let again = q
        .push_batch(vec![ujob("u.b", json!("new"), rule.clone())])
        .await?;
    ensure!(again == vec![ids[0]]);
    // A batch with a bad rule stores nothing, naming the job.
    let r = q
        .push_batch_outcomes(vec![
            ujob("u.b", json!("ok"), rule.clone()),
            ujob("u.b", json!(1), Unique::new().by_fields(["missing"])),
        ])
        .await;
    ensure!(
        invalid_field(&r) == Ok("jobs[1].unique.fields".into()),
        "{r:?}"
    );
    ensure!(
        jobs_of(&q, "u.b").await?.len() == 4,
        "a refused batch stored a job"
    );
    Ok(())
}

/// In replace mode a push that meets a pending job takes its place's payload, priority and run
/// time; one that meets a running job leaves it as it is.
pub async fn unique_replace_updates_a_pending_job(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let rule = Unique::new().by_fields(["account"]).replace();
    let first = q
        .push_outcome(
            ujob("u.r", json!({"account": 1, "v": 1}), rule.clone())
                .delay(Duration::from_secs(3600))
                .priority(1),
        )
        .await?;
    let second = q
        .push_outcome(ujob("u.r", json!({"account": 1, "v": 2}), rule.clone()).priority(7))
        .await?;
    ensure!(second == PushOutcome::Replaced(first.id()), "{second:?}");
    let j = get(&q, first.id()).await?;
    ensure!(
        j.payload_value() == json!({"account": 1, "v": 2})
            && j.priority == 7
            && j.run_at <= q.now().await?
            && j.state == JobState::Pending,
        "replaced: {j:?}"
    );
    ensure!(jobs_of(&q, "u.r").await?.len() == 1);
    // Running: not replaced.
    let l = pop_one(&q, "u.r").await?;
    ensure!(l.job.id == first.id());
    let third = q
        .push_outcome(ujob("u.r", json!({"account": 1, "v": 3}), rule))
        .await?;
    ensure!(third == PushOutcome::Existing(first.id()), "{third:?}");
    let j = get(&q, first.id()).await?;
    ensure!(
        j.payload_value() == json!({"account": 1, "v": 2}) && j.state == JobState::Running,
        "a running job changed: {j:?}"
    );
    Ok(())
}

/// A dead job whose key another job took meanwhile cannot come back: `retry` names the holder
/// and changes nothing; once the holder is gone, it can.
pub async fn unique_retry_of_a_job_whose_key_is_taken(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let rule = Unique::new().by_args();
    let a = q.push_outcome(ujob("u.t", json!(1), rule.clone())).await?;
    let l = pop_one(&q, "u.t").await?;
    q.fail(&l.lease, Failure::permanent("x")).await?;
    let b = q.push_outcome(ujob("u.t", json!(1), rule.clone())).await?;
    ensure!(b.inserted());
    match q.retry(a.id()).await {
        Err(Error::UniqueTaken { job, holder }) if job == a.id() && holder == b.id() => {}
        other => bail!("retry of a job whose key is taken: {other:?}"),
    }
    expect_state(&q, a.id(), JobState::Dead).await?;
    q.cancel(b.id()).await?;
    q.retry(a.id()).await?;
    expect_state(&q, a.id(), JobState::Pending).await?;
    Ok(())
}

#[derive(serde::Serialize, serde::Deserialize)]
struct SyncAccount {
    account: u64,
}

impl JobArgs for SyncAccount {
    const KIND: &'static str = "sync_account";

    fn options() -> KindOptions {
        KindOptions::new()
            .queue("u.k")
            .unique(Unique::new().by_args())
    }
}

/// A kind's rule applies to its typed pushes; a push can set its own.
pub async fn unique_rule_of_a_kind(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let a = q
        .push_outcome(NewJob::of(&SyncAccount { account: 1 })?)
        .await?;
    let b = q
        .push_outcome(NewJob::of(&SyncAccount { account: 1 })?)
        .await?;
    let c = q
        .push_outcome(NewJob::of(&SyncAccount { account: 2 })?)
        .await?;
    ensure!(a.inserted() && b == PushOutcome::Existing(a.id()) && c.inserted());
    // push returns the id of the job that stands for it.
    ensure!(q.push(NewJob::of(&SyncAccount { account: 1 })?).await? == a.id());
    ensure!(jobs_of(&q, "u.k").await?.len() == 2);
    Ok(())
}

/// Inside the caller's transaction: a unique push meets a job committed before, and one pushed
/// in a transaction that rolled back is gone.
pub async fn unique_push_inside_a_transaction(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let Some(tx) = fx.transactions() else {
        return Err(ctx.skip("the backend has no caller transactions"));
    };
    let q = fx.queue();
    let rule = Unique::new().by_args();
    let rolled_back = tx
        .push_in_tx(ujob("u.tx", json!(1), rule.clone()), "u-rb", false)
        .await?;
    let committed = tx
        .push_in_tx(ujob("u.tx", json!(1), rule.clone()), "u-c", true)
        .await?;
    ensure!(committed != rolled_back, "the rolled back job held the key");
    let met = tx
        .push_in_tx(ujob("u.tx", json!(1), rule.clone()), "u-m", true)
        .await?;
    ensure!(
        met == committed,
        "a push in a transaction did not meet the job"
    );
    ensure!(jobs_of(&q, "u.tx").await?.len() == 1);
    ensure!(q.get(rolled_back).await?.is_none());
    Ok(())
}

/// Bad rules are refused naming the field; nothing is stored.
pub async fn unique_bad_rules_store_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let cases: Vec<(&str, NewJob)> = vec![
        (
            "unique.states",
            ujob("u.bad", json!(1), Unique::new().states([])),
        ),
        (
            "unique.states",
            ujob("u.bad", json!(1), Unique::new().states([JobState::Pending])),
        ),
        (
            "unique.period",
            ujob("u.bad", json!(1), Unique::new().by_period(Duration::ZERO)),
        ),
        (
            "unique.period",
            ujob(
                "u.bad",
                json!(1),
                Unique::new().by_period(Duration::from_secs(20 * 365 * 24 * 3600)),
            ),
        ),
        (
            "unique.fields",
            ujob("u.bad", json!({"a": 1}), Unique::new().by_fields(["b"])),
        ),
        (
            "unique.fields",
            ujob("u.bad", json!([1]), Unique::new().by_fields(["a"])),
        ),
        (
            "unique.fields",
            ujob(
                "u.bad",
                json!({"a": 1}),
                Unique::new().by_fields(Vec::<String>::new()),
            ),
        ),
        ("unique", job("u.bad", json!(1)).unique(Unique::new())),
    ];
    for (field, bad) in cases {
        let r = q.push_outcome(bad).await;
        ensure!(invalid_field(&r) == Ok(field.into()), "{field}: {r:?}");
    }
    ensure!(
        jobs_of(&q, "u.bad").await?.is_empty(),
        "a bad push stored a job"
    );
    // A pop of the queue finds nothing.
    ensure!(pop(&q, "u.bad", 10, LONG_LEASE, "w").await?.is_empty());
    Ok(())
}
