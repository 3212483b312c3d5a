//! Push, pop and the order of delivery.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::ensure;
use queue_core::{JobState, NewJob};
use serde_json::json;

use super::{expect_state, get, job, pop, pop_one, LONG_LEASE};
use crate::Ctx;

/// Payloads come back exactly as pushed: nested JSON, unicode and escapes, big integers, and a
/// 1 MiB document; both from `pop` and from `get`.
pub async fn round_trip_payloads(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let payloads = vec![
        json!({"user": {"id": 42, "tags": ["a", "b"], "prefs": {"email": true, "nested": [[1, 2], {"x": null}]}}}),
        json!({"text": "ünïcödé – 漢字 – עברית – 🚀👩‍💻", "quote": "she said \"hi\"\\ \n\t end"}),
        json!({"big": 9_007_199_254_740_993_i64, "neg": -17, "float": 1.5, "t": true, "f": false}),
        json!(["top", "level", "array", 1, 2.25]),
        json!("a bare string"),
        json!({"blob": "x".repeat(1024 * 1024)}),
    ];
    let mut ids = Vec::new();
    for p in &payloads {
        ids.push(q.push(job("payloads", p.clone())).await?);
    }
    for (id, p) in ids.iter().zip(&payloads) {
        let stored = get(&q, *id).await?;
        ensure!(
            stored.payload_value() == *p,
            "get {id}: payload changed on the way through the database"
        );
        ensure!(stored.state == JobState::Pending && stored.queue == "payloads");
    }
    let mut popped = Vec::new();
    for _ in 0..payloads.len() {
        popped.push(pop_one(&q, "payloads").await?);
    }
    for (l, (id, p)) in popped.iter().zip(ids.iter().zip(&payloads)) {
        ensure!(l.job.id == *id, "popped {} where {id} was next", l.job.id);
        ensure!(l.job.payload_value() == *p, "pop {id}: payload changed");
    }
    Ok(())
}

/// Popping an empty queue returns an empty Vec at once, and stores nothing.
pub async fn empty_pop_returns_at_once(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    // Another queue has work; this one has none.
    q.push(job("busy", json!(1))).await?;
    let t = Instant::now();
    let got = pop(&q, "idle", 10, LONG_LEASE, "w1").await?;
    let took = t.elapsed();
    ensure!(
        got.is_empty(),
        "popped {} jobs from an empty queue",
        got.len()
    );
    ensure!(took < Duration::from_secs(1), "an empty pop took {took:?}");
    ensure!(q
        .stats(Some("idle"))
        .await?
        .iter()
        .all(|s| s.queue != "idle" || s.count(JobState::Running) == 0));
    let busy = q.stats(Some("busy")).await?;
    ensure!(
        busy.len() == 1 && busy[0].available == 1 && busy[0].running == 0,
        "{busy:?}"
    );
    Ok(())
}

/// Within one priority, jobs come out in the order they were pushed.
pub async fn fifo_within_priority(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let mut ids = Vec::new();
    for i in 0..10 {
        ids.push(q.push(job("fifo", json!({ "i": i }))).await?);
    }
    for (i, id) in ids.iter().enumerate() {
        let l = pop_one(&q, "fifo").await?;
        ensure!(
            l.job.id == *id,
            "pop #{i} returned {} (payload {}), expected {id}",
            l.job.id,
            l.job.payload.get()
        );
        expect_state(&q, *id, JobState::Running).await?;
    }
    ensure!(pop(&q, "fifo", 1, LONG_LEASE, "w1").await?.is_empty());
    Ok(())
}

/// A higher priority is claimed first, whatever the push order; equal priorities stay FIFO.
pub async fn higher_priority_first(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let low = q.push(job("prio", json!("low")).priority(-5)).await?;
    let mid1 = q.push(job("prio", json!("mid1"))).await?;
    let high = q.push(job("prio", json!("high")).priority(10)).await?;
    let mid2 = q.push(job("prio", json!("mid2"))).await?;
    let top = q.push(job("prio", json!("top")).priority(1000)).await?;
    for (i, expected) in [top, high, mid1, mid2, low].into_iter().enumerate() {
        let l = pop_one(&q, "prio").await?;
        ensure!(
            l.job.id == expected,
            "pop #{i} returned {}, expected {}",
            l.job.payload.get(),
            get(&q, expected).await?.payload.get()
        );
    }
    // A batch pop takes the top of the order too.
    let a = q.push(job("prio2", json!(1)).priority(1)).await?;
    let b = q.push(job("prio2", json!(2)).priority(3)).await?;
    let c = q.push(job("prio2", json!(3)).priority(2)).await?;
    let _d = q.push(job("prio2", json!(4))).await?;
    let got: HashSet<_> = pop(&q, "prio2", 3, LONG_LEASE, "w1")
        .await?
        .into_iter()
        .map(|l| l.job.id)
        .collect();
    ensure!(
        got == HashSet::from([a, b, c]),
        "a pop of 3 claimed {got:?}"
    );
    Ok(())
}

/// A delayed job is invisible (and counted as scheduled) until it is due, then poppable.
pub async fn delayed_job_invisible_until_due(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let before = q.now().await?;
    let id = q
        .push(job("later", json!("x")).delay(Duration::from_secs(3)))
        .await?;
    let stored = expect_state(&q, id, JobState::Pending).await?;
    let ahead = (stored.run_at - before).to_std().unwrap_or_default();
    ensure!(
        ahead >= Duration::from_millis(2_950) && ahead <= Duration::from_secs(8),
        "run_at is {ahead:?} after the push, expected about 3 s"
    );
    ensure!(
        pop(&q, "later", 10, LONG_LEASE, "w1").await?.is_empty(),
        "a delayed job was claimed early"
    );
    let stats = q.stats(Some("later")).await?;
    ensure!(
        stats.len() == 1 && stats[0].scheduled == 1 && stats[0].available == 0,
        "{stats:?}"
    );
    expect_state(&q, id, JobState::Pending).await?;
    super::sleep_until_db(&q, stored.run_at).await?;
    let l = pop_one(&q, "later").await?;
    ensure!(l.job.id == id && l.lease.attempt == 1);
    Ok(())
}

/// A job pushed at an instant in the past is due at once; one in the future waits.
pub async fn run_at_schedules(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let now = q.now().await?;
    let past = q
        .push(job("at", json!("past")).run_at(now - chrono::Duration::hours(1)))
        .await?;
    let future = q
        .push(job("at", json!("future")).run_at(now + chrono::Duration::hours(1)))
        .await?;
    let l = pop_one(&q, "at").await?;
    ensure!(
        l.job.id == past,
        "claimed {} before the past-dated job",
        l.job.id
    );
    ensure!(
        pop(&q, "at", 10, LONG_LEASE, "w1").await?.is_empty(),
        "a job due in an hour was claimed"
    );
    let f = expect_state(&q, future, JobState::Pending).await?;
    let ahead = (f.run_at - now).num_seconds();
    ensure!(
        (3500..=3700).contains(&ahead),
        "run_at is {ahead} s ahead, expected about 3600"
    );
    Ok(())
}

/// Jobs of one queue are never claimed from another.
pub async fn queues_are_isolated(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let a = q.push(job("alpha", json!("a"))).await?;
    let b = q.push(job("beta", json!("b"))).await?;
    let got = pop(&q, "alpha", 10, LONG_LEASE, "w1").await?;
    ensure!(got.len() == 1 && got[0].job.id == a && got[0].job.queue == "alpha");
    expect_state(&q, b, JobState::Pending).await?;
    ensure!(pop(&q, "alpha", 10, LONG_LEASE, "w1").await?.is_empty());
    ensure!(pop(&q, "gamma", 10, LONG_LEASE, "w1").await?.is_empty());
    let got = pop(&q, "beta", 10, LONG_LEASE, "w1").await?;
    ensure!(got.len() == 1 && got[0].job.id == b);
    Ok(())
}

/// A pop claims at most its limit; the rest stay pending.
pub async fn pop_limit_respected(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let jobs = (0..10).map(|i| job("lim", json!(i))).collect();
    q.push_batch(jobs).await?;
    let got = pop(&q, "lim", 3, LONG_LEASE, "w1").await?;
    ensure!(got.len() == 3, "a pop with limit 3 claimed {}", got.len());
    let s = &q.stats(Some("lim")).await?[0];
    ensure!(s.running == 3 && s.available == 7, "{s:?}");
    let got = pop(&q, "lim", 100, LONG_LEASE, "w1").await?;
    ensure!(
        got.len() == 7,
        "a pop with limit 100 claimed {} of the 7 left",
        got.len()
    );
    let s = &q.stats(Some("lim")).await?[0];
    ensure!(s.running == 10 && s.available == 0, "{s:?}");
    Ok(())
}

/// A pop records the claim in the row: running, attempt counted, lease, worker.
pub async fn pop_records_the_claim(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("claim", json!("x")).max_attempts(7)).await?;
    let before = q.now().await?;
    let got = pop(&q, "claim", 1, Duration::from_secs(20), "worker-7").await?;
    ensure!(got.len() == 1);
    let l = &got[0];
    ensure!(l.lease.job_id == id && l.lease.queue == "claim");
    ensure!(
        l.lease.attempt == 1 && l.lease.max_attempts == 7,
        "{:?}",
        l.lease
    );
    ensure!(l.job.state == JobState::Running && l.job.attempts == 1);
    let stored = expect_state(&q, id, JobState::Running).await?;
    ensure!(stored.attempts == 1, "attempts stored {}", stored.attempts);
    ensure!(
        stored.worker.as_deref() == Some("worker-7"),
        "worker stored {:?}",
        stored.worker
    );
    let exp = stored
        .lease_expires_at
        .ok_or_else(|| anyhow::anyhow!("no lease expiry stored"))?;
    let ahead = (exp - before).to_std().unwrap_or_default();
    ensure!(
        ahead >= Duration::from_secs(19) && ahead <= Duration::from_secs(25),
        "lease expires {ahead:?} after the pop, expected about 20 s"
    );
    let diff = (exp - l.lease.expires_at).num_milliseconds().abs();
    ensure!(
        diff <= 1,
        "the returned lease expiry differs from the stored one by {diff} ms"
    );
    // A second claim of the same job is impossible while the lease lives.
    ensure!(pop(&q, "claim", 1, LONG_LEASE, "w2").await?.is_empty());
    Ok(())
}

/// `get` of an id that was never stored is `None`.
pub async fn get_unknown_is_none(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    q.push(job("q", json!(1))).await?;
    let unknown = NewJob::new("q", &1)?.id();
    ensure!(
        q.get(unknown).await?.is_none(),
        "get of an unknown id returned a job"
    );
    Ok(())
}

/// `push_batch` returns the ids in order and stores every job.
pub async fn push_batch_returns_ids_in_order(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let jobs: Vec<NewJob> = (0..50)
        .map(|i| job("batch", json!({ "i": i })).priority(i % 3))
        .collect();
    let expected: Vec<_> = jobs.iter().map(NewJob::id).collect();
    let ids = q.push_batch(jobs).await?;
    ensure!(
        ids == expected,
        "push_batch returned ids out of order or different"
    );
    for (i, id) in ids.iter().enumerate() {
        let j = expect_state(&q, *id, JobState::Pending).await?;
        ensure!(
            j.payload_value() == json!({ "i": i }),
            "job {i} stored payload {}",
            j.payload.get()
        );
        ensure!(j.priority == (i as i32) % 3);
    }
    let s = &q.stats(Some("batch")).await?[0];
    ensure!(s.available == 50, "{s:?}");
    // An empty batch stores nothing (it may be accepted or rejected as `jobs`).
    match q.push_batch(Vec::new()).await {
        Ok(ids) => ensure!(ids.is_empty(), "an empty batch returned {} ids", ids.len()),
        Err(queue_core::Error::InvalidInput { field, .. }) if field == "jobs" => {}
        Err(e) => anyhow::bail!("an empty batch failed with {e:?}"),
    }
    ensure!(q.stats(Some("batch")).await?[0].available == 50);
    Ok(())
}

/// Every JSON text the client accepts comes back byte for byte, on every backend: key order,
/// whitespace, number spelling, and escapes some databases refuse to store in their JSON types
/// (`\u0000`, a lone surrogate).
pub async fn payload_text_round_trips_exactly(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let texts = [
        r#"{"z": 1, "a": [1.50, 1e3, -0], "nested": {"k": null}}"#,
        r#"{"spaced"  :  true ,"x":[ ]}"#,
        r#""NUL \u0000 inside""#,
        r#"{"lone": "\ud800"}"#,
        r#"{"dup": 1, "dup": 2}"#,
        r#"["ünïcødé 🚀", "\u00fc"]"#,
    ];
    let mut ids = Vec::new();
    for text in texts {
        ids.push(q.push(NewJob::from_json("texts", text)?).await?);
    }
    for (id, text) in ids.iter().zip(texts) {
        let stored = get(&q, *id).await?;
        ensure!(
            stored.payload.get() == text,
            "get: {:?} came back as {:?}",
            text,
            stored.payload.get()
        );
    }
    for text in texts {
        let l = pop_one(&q, "texts").await?;
        ensure!(
            l.job.payload.get() == text,
            "pop: {:?} came back as {:?}",
            text,
            l.job.payload.get()
        );
    }
    Ok(())
}

/// Priorities at the ends of the i32 range keep their order (highest first).
pub async fn extreme_priorities_keep_their_order(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let min = q.push(job("ext", json!(1)).priority(i32::MIN)).await?;
    let zero = q.push(job("ext", json!(2))).await?;
    let max = q.push(job("ext", json!(3)).priority(i32::MAX)).await?;
    let zero2 = q.push(job("ext", json!(4))).await?;
    let got = pop(&q, "ext", 10, LONG_LEASE, "w1").await?;
    let ids: Vec<_> = got.iter().map(|l| l.job.id).collect();
    ensure!(ids == vec![max, zero, zero2, min], "claim order {ids:?}");
    ensure!(got[3].job.priority == i32::MIN && got[0].job.priority == i32::MAX);
    Ok(())
}
