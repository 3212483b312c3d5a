//! Queue controls: pause and resume, and a global concurrency limit, enforced inside the claim
//! across queue values (each with its own pool, as separate processes have) and checked against
//! what the database stores.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use queue_core::{
    Error, JobContext, JobError, JobId, JobState, PopRequest, Queue, QueueControl, QueueStats,
    RateLimit, Worker, MAX_CONCURRENCY_LIMIT, MAX_RATE_PERIOD,
};
use serde_json::json;

use super::{
    expect_state, invalid_field, job, pop, run_64_claimers, sleep_until_db, LONG_LEASE, SHORT_LEASE,
};
use crate::Ctx;

async fn stats_of(q: &Arc<dyn Queue>, queue: &str) -> anyhow::Result<QueueStats> {
    let all = q.stats(Some(queue)).await?;
    all.into_iter()
        .find(|s| s.queue == queue)
        .with_context(|| format!("stats has no line for {queue}"))
}

async fn push_n(q: &Arc<dyn Queue>, queue: &str, n: usize) -> anyhow::Result<Vec<JobId>> {
    let jobs = (0..n).map(|i| job(queue, json!({ "i": i }))).collect();
    Ok(q.push_batch(jobs).await?)
}

/// A paused queue gives out nothing, through this queue value and another one, while pushes
/// are still stored; `stats` and `controls` say it is paused; other queues are not affected;
/// resume gives its jobs out again.
pub async fn controls_pause_and_resume(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    push_n(&q, "paused", 5).await?;
    push_n(&q, "other", 2).await?;
    q.pause("paused").await?;
    q.pause("paused").await.context("pausing twice")?;
    for (name, qv) in [("this value", &q), ("another value", &q2)] {
        let got = pop(qv, "paused", 10, LONG_LEASE, "w").await?;
        ensure!(
            got.is_empty(),
            "{name}: a paused queue gave out {}",
            got.len()
        );
    }
    let late = q.push(job("paused", json!("late"))).await?;
    expect_state(&q, late, JobState::Pending).await?;
    let s = stats_of(&q, "paused").await?;
    ensure!(
        s.paused && s.available == 6 && s.running == 0,
        "stats of the paused queue: {s:?}"
    );
    let all = q2.stats(None).await?;
    ensure!(
        all.iter().any(|s| s.queue == "paused" && s.paused)
            && all.iter().any(|s| s.queue == "other" && !s.paused),
        "stats of every queue: {all:?}"
    );
    let controls = q2.controls().await?;
    ensure!(
        controls
            == vec![QueueControl {
                queue: "paused".into(),
                paused: true,
                concurrency_limit: None,
                rate_limit: None,
                ..QueueControl::default()
            }],
        "controls: {controls:?}"
    );
    let other = pop(&q2, "other", 10, LONG_LEASE, "w").await?;
    ensure!(other.len() == 2, "the other queue gave out {}", other.len());
    q2.resume("paused").await?;
    let got = pop(&q, "paused", 10, LONG_LEASE, "w").await?;
    ensure!(
        got.len() == 6,
        "after resume {} of 6 were given out",
        got.len()
    );
    let s = stats_of(&q, "paused").await?;
    ensure!(
        !s.paused && s.running == 6 && s.available == 0,
        "stats after resume: {s:?}"
    );
    ensure!(
        q.controls().await?.is_empty(),
        "a resumed queue is still listed"
    );
    q.resume("paused").await.context("resuming twice")?;
    Ok(())
}

/// Poppers on two queue values drain a queue; once `pause` has returned, no pop that starts
/// gives out a job (those in flight may finish), and the database holds exactly the claimed
/// jobs as running. After resume the poppers drain the rest, each job exactly once.
pub async fn controls_pause_while_draining(ctx: Ctx) -> anyhow::Result<()> {
    const TOTAL: usize = 600;
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    for _ in 0..TOTAL / 200 {
        push_n(&q, "drain", 200).await?;
    }
    let paused_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    // Set before resume is called (claims may succeed from then on), and after it returned
    // (an empty claim then means the queue is drained).
    let resuming = Arc::new(AtomicBool::new(false));
    let resumed = Arc::new(AtomicBool::new(false));
    let claimed: Arc<Mutex<Vec<JobId>>> = Arc::default();
    let violations: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut tasks = Vec::new();
    for p in 0..8usize {
        let qv = if p % 2 == 0 { q.clone() } else { q2.clone() };
        let paused_at = paused_at.clone();
        let resuming = resuming.clone();
        let resumed = resumed.clone();
        let claimed = claimed.clone();
        let violations = violations.clone();
        tasks.push(tokio::spawn(async move {
            let worker = format!("drainer-{p}");
            loop {
                let started = Instant::now();
                let got = qv
                    .pop(
                        PopRequest::new("drain")
                            .limit(1 + p % 3)
                            .lease(LONG_LEASE)
                            .worker(&worker),
                    )
                    .await?;
                let after_pause = paused_at
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .is_some_and(|at| started > at);
                if after_pause && !resuming.load(Ordering::SeqCst) && !got.is_empty() {
                    violations
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("{worker} claimed {} after the pause", got.len()));
                }
                if got.is_empty() {
                    if resumed.load(Ordering::SeqCst) {
                        return anyhow::Ok(());
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
                claimed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(got.iter().map(|l| l.job.id));
                for l in &got {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    qv.ack(&l.lease).await?;
                }
            }
        }));
    }
    // Pause once a third is done.
    let t = Instant::now();
    while stats_of(&q, "drain").await?.completed < (TOTAL / 3) as u64 {
        ensure!(
            t.elapsed() < Duration::from_secs(60),
            "the drain made no progress"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    q.pause("drain").await?;
    *paused_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    // Let the poppers try for a while; jobs claimed before the pause finish (their claims and
    // acks may take a while on a loaded machine: the state is polled until they have).
    tokio::time::sleep(Duration::from_millis(600)).await;
    let t = Instant::now();
    let (during, claimed_then) = loop {
        let during = stats_of(&q2, "drain").await?;
        let claimed_then = claimed.lock().unwrap_or_else(|e| e.into_inner()).len();
        let settled = during.running == 0 && during.completed == claimed_then as u64;
        if settled || t.elapsed() > Duration::from_secs(20) {
            break (during, claimed_then);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    ensure!(
        during.paused && during.running == 0,
        "well into the pause: {during:?}"
    );
    ensure!(
        during.completed == claimed_then as u64
            && during.available == (TOTAL - claimed_then) as u64,
        "well into the pause the database holds {during:?}, the poppers claimed {claimed_then}"
    );
    ensure!(
        claimed_then < TOTAL,
        "everything was claimed before the pause took effect"
    );
    resuming.store(true, Ordering::SeqCst);
    q2.resume("drain").await?;
    resumed.store(true, Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(60), async {
        for t in tasks {
            t.await.context("popper panicked")??;
        }
        anyhow::Ok(())
    })
    .await
    .context("the poppers did not finish within 60 s of the resume")??;
    let v = violations.lock().unwrap_or_else(|e| e.into_inner()).clone();
    ensure!(v.is_empty(), "claims after the pause: {v:?}");
    let claimed = claimed.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let unique: HashSet<JobId> = claimed.iter().copied().collect();
    ensure!(
        unique.len() == claimed.len() && claimed.len() == TOTAL,
        "{} deliveries of {} distinct jobs, {TOTAL} pushed",
        claimed.len(),
        unique.len()
    );
    let end = stats_of(&q, "drain").await?;
    ensure!(
        end.completed == TOTAL as u64 && !end.paused,
        "at the end: {end:?}"
    );
    Ok(())
}

/// 64 claimers on two queue values take jobs of a queue limited to 3, hold each a few
/// milliseconds and complete it. A sampler reading the database never sees more than 3 of its
/// jobs running, sees 3 at some point, and every job is completed exactly once.
pub async fn controls_limit_holds_under_64_claimers(ctx: Ctx) -> anyhow::Result<()> {
    const TOTAL: usize = 240;
    const LIMIT: u32 = 3;
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    q.set_concurrency_limit("lim", Some(LIMIT)).await?;
    push_n(&q, "lim", TOTAL).await?;
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let q = q2.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let (mut max, mut samples) = (0u64, 0usize);
            while !done.load(Ordering::SeqCst) {
                let s = stats_of(&q, "lim").await?;
                max = max.max(s.running);
                samples += 1;
                if s.running > u64::from(LIMIT) {
                    bail!(
                        "{} jobs of the queue limited to {LIMIT} were running",
                        s.running
                    );
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            anyhow::Ok((max, samples))
        })
    };
    let finished = run_64_claimers(&q, &q2, "lim", TOTAL, Duration::from_secs(120)).await;
    done.store(true, Ordering::SeqCst);
    let (max, samples) = sampler.await.context("sampler panicked")??;
    let claimed: Vec<JobId> = finished?.into_iter().map(|c| c.0).collect();
    let unique: HashSet<JobId> = claimed.iter().copied().collect();
    ensure!(
        unique.len() == claimed.len() && claimed.len() == TOTAL,
        "{} deliveries of {} distinct jobs, {TOTAL} pushed",
        claimed.len(),
        unique.len()
    );
    let s = stats_of(&q, "lim").await?;
    ensure!(
        s.completed == TOTAL as u64 && s.concurrency_limit == Some(LIMIT),
        "at the end: {s:?}"
    );
    ensure!(
        max == u64::from(LIMIT),
        "the most running jobs seen in {samples} samples was {max}, never the limit {LIMIT}"
    );
    Ok(())
}

/// An expired lease frees its place at its expiry, before any rescue; a rescued job waits for
/// a free place like any other; the limit counts leases of every queue value.
pub async fn controls_limit_frees_expired_leases(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    q.set_concurrency_limit("exp", Some(2)).await?;
    push_n(&q, "exp", 6).await?;
    // Long enough that the next claim comes before it ends even on a loaded machine behind a
    // pooler; the check below tells a late claim from a limit that did not hold.
    let first_lease = SHORT_LEASE * 12;
    let first = pop(&q, "exp", 5, first_lease, "a").await?;
    ensure!(first.len() == 2, "the first claim got {}", first.len());
    let earliest = first
        .iter()
        .map(|l| l.lease.expires_at)
        .min()
        .context("no lease")?;
    let more = pop(&q2, "exp", 5, LONG_LEASE, "b").await?;
    if let Some(l) = more.first() {
        // The database's time of that claim, from its lease.
        let claimed_at = l.lease.expires_at - chrono::Duration::from_std(LONG_LEASE)?;
        ensure!(
            claimed_at >= earliest,
            "another value got {} past the limit while both leases were live",
            more.len()
        );
        bail!(
            "the second claim came {:?} after the first leases of {first_lease:?} had \
             expired: the machine is too slow for this case",
            (claimed_at - earliest).to_std().unwrap_or_default()
        );
    }
    let expiry = first
        .iter()
        .map(|l| l.lease.expires_at)
        .max()
        .context("no lease")?;
    sleep_until_db(&q, expiry).await?;
    // Not rescued yet: the two jobs are still running, their leases expired.
    for l in &first {
        expect_state(&q, l.job.id, JobState::Running).await?;
    }
    let second = pop(&q2, "exp", 5, LONG_LEASE, "b").await?;
    ensure!(
        second.len() == 2,
        "after the leases expired the claim got {} (expected 2)",
        second.len()
    );
    let rescued = q.rescue_expired().await?;
    ensure!(rescued >= 2, "rescued {rescued}");
    for l in &first {
        expect_state(&q, l.job.id, JobState::Pending).await?;
    }
    let none = pop(&q, "exp", 5, LONG_LEASE, "a").await?;
    ensure!(
        none.is_empty(),
        "{} given out while two live leases fill the limit",
        none.len()
    );
    for l in &second {
        q2.ack(&l.lease).await?;
    }
    let third = pop(&q, "exp", 5, LONG_LEASE, "a").await?;
    ensure!(
        third.len() == 2,
        "after two acks the claim got {}",
        third.len()
    );
    let s = stats_of(&q, "exp").await?;
    ensure!(
        s.running == 2 && s.completed == 2 && s.available == 2,
        "stored: {s:?}"
    );
    Ok(())
}

/// Raising, lowering and removing a limit take effect at the next claim; a lower limit does
/// not take leases away; the ack-and-claim call honours the limit too.
pub async fn controls_limit_changes_take_effect(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    push_n(&q, "chg", 12).await?;
    // This value learns the queue is unlimited before another value limits it.
    let a = pop(&q, "chg", 1, LONG_LEASE, "a").await?;
    ensure!(a.len() == 1);
    q2.set_concurrency_limit("chg", Some(2)).await?;
    let b = pop(&q, "chg", 5, LONG_LEASE, "a").await?;
    ensure!(
        b.len() == 1,
        "limit 2 with 1 running: the claim got {}",
        b.len()
    );
    q2.set_concurrency_limit("chg", Some(5)).await?;
    let c = pop(&q, "chg", 10, LONG_LEASE, "a").await?;
    ensure!(
        c.len() == 3,
        "limit 5 with 2 running: the claim got {}",
        c.len()
    );
    q2.set_concurrency_limit("chg", Some(1)).await?;
    let s = stats_of(&q, "chg").await?;
    ensure!(
        s.running == 5 && s.concurrency_limit == Some(1),
        "a lower limit: {s:?}"
    );
    // A value that has not claimed from the queue yet, so it tries the one-call path first.
    let q3 = fx.another().await?;
    let leases: Vec<_> = a.iter().chain(&b).map(|l| l.lease.clone()).collect();
    let req = queue_core::CheckedPop::new(
        PopRequest::new("chg")
            .limit(10)
            .lease(LONG_LEASE)
            .worker("a"),
        &queue_core::Limits::default(),
    )?;
    let (acked, claimed) = q3.ack_batch_and_pop(&leases, &req).await?;
    let claimed = claimed?;
    ensure!(
        acked == 2 && claimed.is_empty(),
        "ack-and-claim with 3 running over a limit of 1: acked {acked}, claimed {}",
        claimed.len()
    );
    q.set_concurrency_limit("chg", None).await?;
    let rest = pop(&q2, "chg", 20, LONG_LEASE, "b").await?;
    ensure!(
        rest.len() == 7,
        "without a limit the claim got {}",
        rest.len()
    );
    let s = stats_of(&q, "chg").await?;
    ensure!(
        s.running == 10 && s.completed == 2 && s.concurrency_limit.is_none(),
        "stored: {s:?}"
    );
    ensure!(
        q.controls().await?.is_empty(),
        "a queue without limit is listed"
    );
    Ok(())
}

/// Bad limits and queue names are refused naming the field, and nothing is stored.
pub async fn controls_bad_input_stores_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    push_n(&q, "ok", 1).await?;
    let cases: Vec<(&str, queue_core::Result<()>, &str)> = vec![
        (
            "limit 0",
            q.set_concurrency_limit("ok", Some(0)).await,
            "concurrency_limit",
        ),
        (
            "limit above the maximum",
            q.set_concurrency_limit("ok", Some(MAX_CONCURRENCY_LIMIT + 1))
                .await,
            "concurrency_limit",
        ),
        (
            "absurd limit",
            q.set_concurrency_limit("ok", Some(u32::MAX)).await,
            "concurrency_limit",
        ),
        (
            "empty queue name",
            q.set_concurrency_limit("", Some(3)).await,
            "queue",
        ),
        (
            "rate limit 0",
            q.set_rate_limit(
                "ok",
                Some(RateLimit {
                    limit: 0,
                    period: Duration::from_secs(1),
                }),
            )
            .await,
            "rate_limit.limit",
        ),
        (
            "rate limit above the maximum",
            q.set_rate_limit(
                "ok",
                Some(RateLimit {
                    limit: MAX_CONCURRENCY_LIMIT + 1,
                    period: Duration::from_secs(1),
                }),
            )
            .await,
            "rate_limit.limit",
        ),
        (
            "rate period of zero",
            q.set_rate_limit(
                "ok",
                Some(RateLimit {
                    limit: 5,
                    period: Duration::ZERO,
                }),
            )
            .await,
            "rate_limit.period",
        ),
        (
            "rate period of 1 ms",
            q.set_rate_limit(
                "ok",
                Some(RateLimit {
                    limit: 5,
                    period: Duration::from_millis(1),
                }),
            )
            .await,
            "rate_limit.period",
        ),
        (
            "rate period longer than the longest",
            q.set_rate_limit(
                "ok",
                Some(RateLimit {
                    limit: 5,
                    period: MAX_RATE_PERIOD + Duration::from_secs(1),
                }),
            )
            .await,
            "rate_limit.period",
        ),
        (
            "rate period not in whole milliseconds",
            q.set_rate_limit(
                "ok",
                Some(RateLimit {
                    limit: 5,
                    period: Duration::from_micros(10_500),
                }),
            )
            .await,
            "rate_limit.period",
        ),
        (
            "rate limit of an empty queue name",
            q.set_rate_limit(
                "",
                Some(RateLimit {
                    limit: 5,
                    period: Duration::from_secs(1),
                }),
            )
            .await,
            "queue",
        ),
        ("pause of an empty name", q.pause("").await, "queue"),
        ("pause of a name with NUL", q.pause("a\0b").await, "queue"),
        (
            "resume of a too long name",
            q.resume(&"x".repeat(10_000)).await,
            "queue",
        ),
    ];
    for (what, r, field) in cases {
        match invalid_field(&r) {
            Ok(f) if f == field => {}
            Ok(f) => bail!("{what}: the error names {f:?}, not {field:?}"),
            Err(other) => bail!("{what}: expected InvalidInput, got {other}"),
        }
        if let Err(Error::InvalidInput { rule, .. }) = &r {
            ensure!(!rule.is_empty(), "{what}: the error gives no rule");
        }
    }
    ensure!(
        q.controls().await?.is_empty(),
        "a refused call stored controls"
    );
    let s = stats_of(&q, "ok").await?;
    ensure!(
        !s.paused && s.concurrency_limit.is_none(),
        "stats after refused calls: {s:?}"
    );
    let got = pop(&q, "ok", 5, LONG_LEASE, "w").await?;
    ensure!(got.len() == 1, "the queue gave out {}", got.len());
    q.set_concurrency_limit("ok", Some(MAX_CONCURRENCY_LIMIT))
        .await
        .context("the maximum limit is accepted")?;
    Ok(())
}

/// The library's worker (16 slots, prefetch 10, several claims in flight) on a queue limited
/// to 2: the database never shows more than 2 of its jobs running, and every job completes.
pub async fn controls_worker_honours_the_limit(ctx: Ctx) -> anyhow::Result<()> {
    const TOTAL: u64 = 60;
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    q.set_concurrency_limit("wl", Some(2)).await?;
    push_n(&q, "wl", TOTAL as usize).await?;
    let handle = Worker::builder(q.clone(), "wl")
        .concurrency(16)
        .prefetch(10)
        .lease(Duration::from_secs(30))
        .poll_interval(Duration::from_millis(10), Duration::from_millis(50))
        .handler_fn(|_ctx: JobContext| async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok::<(), JobError>(())
        })
        .build()?
        .start();
    let t = Instant::now();
    let mut max = 0;
    loop {
        let s = stats_of(&q2, "wl").await?;
        max = max.max(s.running);
        ensure!(
            s.running <= 2,
            "{} jobs of a queue limited to 2 were running",
            s.running
        );
        if s.completed == TOTAL {
            break;
        }
        ensure!(
            t.elapsed() < Duration::from_secs(60),
            "{} of {TOTAL} completed after 60 s",
            s.completed
        );
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    handle.shutdown(Duration::from_secs(5)).await;
    ensure!(max >= 1, "no job was ever seen running");
    Ok(())
}

/// How many jobs started in each window of `period`, from the starts the database gave out
/// (each lease's expiry less the lease, both by the database's clock).
fn starts_per_window(starts: &[i64], period: Duration) -> std::collections::BTreeMap<i64, u32> {
    let period = i64::try_from(period.as_micros()).expect("a short period");
    let mut windows = std::collections::BTreeMap::new();
    for s in starts {
        *windows.entry(s.div_euclid(period)).or_insert(0) += 1;
    }
    windows
}

/// A rate limit of 4 starts per 300 ms window holds over ten windows while 32 claimers on two
/// queue values take jobs as fast as they can: no window of the database's clock has more than
/// 4 starts, the windows fill up (the limit is a rate, not a stall), every job is delivered
/// once, and `stats` and `controls` show the limit. Removing it gives the rest out at once.
pub async fn controls_rate_limit_holds_over_windows(ctx: Ctx) -> anyhow::Result<()> {
    const LIMITED: usize = 40;
    const REST: usize = 30;
    let rate = RateLimit::new(4, Duration::from_millis(300))?;
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    q.set_rate_limit("rate", Some(rate)).await?;
    push_n(&q, "rate", LIMITED + REST).await?;
    let s = stats_of(&q2, "rate").await?;
    ensure!(s.rate_limit == Some(rate), "stats: {s:?}");
    let controls = q2.controls().await?;
    ensure!(
        controls
            == vec![QueueControl {
                queue: "rate".into(),
                paused: false,
                concurrency_limit: None,
                rate_limit: Some(rate),
                ..QueueControl::default()
            }],
        "controls: {controls:?}"
    );
    let lease_us = i64::try_from(LONG_LEASE.as_micros())?;
    let starts: Arc<Mutex<Vec<(JobId, i64)>>> = Arc::default();
    let mut tasks = Vec::new();
    for p in 0..32usize {
        let qv = if p % 2 == 0 { q.clone() } else { q2.clone() };
        let starts = starts.clone();
        tasks.push(tokio::spawn(async move {
            let worker = format!("claimer-{p}");
            loop {
                if starts.lock().unwrap_or_else(|e| e.into_inner()).len() >= LIMITED {
                    return anyhow::Ok(());
                }
                let got = qv
                    .pop(
                        PopRequest::new("rate")
                            .limit([1, 3, 10][p % 3])
                            .lease(LONG_LEASE)
                            .worker(&worker),
                    )
                    .await
                    .with_context(|| format!("{worker} pop"))?;
                if got.is_empty() {
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    continue;
                }
                starts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(got.iter().map(|l| {
                        let expires = l.lease.expires_at.timestamp_micros();
                        (l.job.id, expires - lease_us)
                    }));
                let leases: Vec<_> = got.iter().map(|l| l.lease.clone()).collect();
                qv.ack_batch(&leases).await?;
            }
        }));
    }
    let run = async {
        for t in tasks {
            t.await.context("claimer panicked")??;
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .context("40 jobs at 4 per 300 ms did not start within 60 s")??;
    let starts = starts.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let ids: HashSet<JobId> = starts.iter().map(|(id, _)| *id).collect();
    ensure!(ids.len() == starts.len(), "a job was delivered twice");
    let windows = starts_per_window(
        &starts.iter().map(|(_, t)| *t).collect::<Vec<_>>(),
        rate.period,
    );
    ensure!(
        windows.values().all(|&n| n <= rate.limit),
        "starts per 300 ms window (limit 4): {windows:?}"
    );
    ensure!(
        windows.len() * 4 >= starts.len() && windows.len() >= 10,
        "{} starts in {} windows: {windows:?}",
        starts.len(),
        windows.len()
    );
    let full = windows.values().filter(|&&n| n == rate.limit).count();
    ensure!(
        full >= windows.len() / 2,
        "only {full} of {} windows reached the limit: {windows:?}",
        windows.len()
    );
    // Without the limit, the rest is given out at once.
    q.set_rate_limit("rate", None).await?;
    let rest = pop(&q2, "rate", 100, LONG_LEASE, "after").await?;
    ensure!(
        rest.len() + starts.len() >= LIMITED + REST,
        "after the limit was removed one pop gave out {} of the {} left",
        rest.len(),
        LIMITED + REST - starts.len()
    );
    ensure!(q.controls().await?.is_empty(), "the limit is still listed");
    Ok(())
}

/// A worker held back by a rate limit sleeps until the next window opens and is woken then,
/// not at its next poll: with polls 10 s apart, 6 jobs at 2 per 400 ms window all complete in
/// a few windows, and no window has more than 2 starts.
pub async fn controls_rate_limited_worker_wakes_at_the_window(ctx: Ctx) -> anyhow::Result<()> {
    const TOTAL: u64 = 6;
    let rate = RateLimit::new(2, Duration::from_millis(400))?;
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    q.set_rate_limit("rw", Some(rate)).await?;
    push_n(&q, "rw", TOTAL as usize).await?;
    let lease = Duration::from_secs(30);
    let lease_us = i64::try_from(lease.as_micros())?;
    let starts: Arc<Mutex<Vec<i64>>> = Arc::default();
    let handle = {
        let starts = starts.clone();
        Worker::builder(q.clone(), "rw")
            .concurrency(8)
            .lease(lease)
            .poll_interval(Duration::from_secs(10), Duration::from_secs(10))
            .handler_fn(move |ctx: JobContext| {
                let starts = starts.clone();
                async move {
                    let expires = ctx.lease().expires_at.timestamp_micros();
                    starts
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(expires - lease_us);
                    Ok::<(), JobError>(())
                }
            })
            .build()?
            .start()
    };
    let t = Instant::now();
    loop {
        let s = stats_of(&q, "rw").await?;
        if s.completed == TOTAL {
            break;
        }
        ensure!(
            t.elapsed() < Duration::from_secs(8),
            "{} of {TOTAL} completed after 8 s: the worker waited for its poll, not the window",
            s.completed
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.shutdown(Duration::from_secs(5)).await;
    let starts = starts.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let windows = starts_per_window(&starts, rate.period);
    ensure!(
        starts.len() == TOTAL as usize && windows.values().all(|&n| n <= rate.limit),
        "starts per 400 ms window (limit 2): {windows:?}"
    );
    Ok(())
}
