//! Concurrency keys and fair shares: a key limit enforced inside the claim across queue values
//! (each with its own pool, as separate processes have) without holding back other keys' jobs,
//! expired leases freeing a key's place, turns across keys, and bad input refused. Counts of
//! running jobs per key are read from the database while the claimers run.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use queue_core::{
    JobId, JobState, NewJob, Queue, QueueStats, RateLimit, Retention, MAX_CONCURRENCY_LIMIT,
};
use serde_json::json;

use super::{
    eventually, expect_state, invalid_field, job, pop, run_64_claimers, sleep_until_db, LONG_LEASE,
    SHORT_LEASE,
};
use crate::Ctx;

async fn stats_of(q: &Arc<dyn Queue>, queue: &str) -> anyhow::Result<QueueStats> {
    let all = q.stats(Some(queue)).await?;
    all.into_iter()
        .find(|s| s.queue == queue)
        .with_context(|| format!("stats has no line for {queue}"))
}

/// `n` jobs of `queue` with concurrency key `key`, pushed in one batch.
async fn push_keyed(
    q: &Arc<dyn Queue>,
    queue: &str,
    key: &str,
    n: usize,
) -> anyhow::Result<Vec<JobId>> {
    let mut ids = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let jobs = chunk
            .iter()
            .map(|i| job(queue, json!({ "key": key, "i": i })).concurrency_key(key))
            .collect();
        ids.extend(q.push_batch(jobs).await?);
    }
    Ok(ids)
}

/// A key limit of `limit` under 64 claimers on two queue values: a deep backlog of one key
/// pushed first, then six other keys. Never more than `limit` jobs of one key run at any
/// moment sampled in the database; the other keys' jobs flow while the first key is at its
/// limit (they all start before half of the first key's have); every job runs once.
async fn key_limit_holds(ctx: Ctx, limit: u32) -> anyhow::Result<()> {
    const HOT: usize = 120;
    const COLD_KEYS: usize = 6;
    const PER_COLD: usize = 20;
    const TOTAL: usize = HOT + COLD_KEYS * PER_COLD;
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    q.set_key_limit("keyed", Some(limit)).await?;
    let mut key_of: HashMap<JobId, String> = HashMap::new();
    for id in push_keyed(&q, "keyed", "hot", HOT).await? {
        key_of.insert(id, "hot".to_owned());
    }
    for k in 0..COLD_KEYS {
        let key = format!("cold-{k}");
        for id in push_keyed(&q, "keyed", &key, PER_COLD).await? {
            key_of.insert(id, key.clone());
        }
    }
    ensure!(key_of.len() == TOTAL, "{} jobs listed", key_of.len());
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let q = q2.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let (mut max, mut samples) = (0u64, 0usize);
            while !done.load(Ordering::SeqCst) {
                let s = stats_of(&q, "keyed").await?;
                for hot in &s.hot_keys {
                    if hot.running > u64::from(limit) {
                        bail!(
                            "{} jobs of key {} were running under a key limit of {limit}",
                            hot.running,
                            hot.key
                        );
                    }
                    max = max.max(hot.running);
                }
                samples += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            anyhow::Ok((max, samples))
        })
    };
    let finished = run_64_claimers(&q, &q2, "keyed", TOTAL, Duration::from_secs(180)).await;
    done.store(true, Ordering::SeqCst);
    let (max, samples) = sampler.await.context("sampler panicked")??;
    let claimed = finished?;
    let unique: HashSet<JobId> = claimed.iter().map(|c| c.0).collect();
    ensure!(
        unique.len() == claimed.len() && claimed.len() == TOTAL,
        "{} deliveries of {} distinct jobs, {TOTAL} pushed",
        claimed.len(),
        unique.len()
    );
    let s = stats_of(&q, "keyed").await?;
    ensure!(
        s.completed == TOTAL as u64 && s.key_limit == Some(limit) && s.hot_keys.is_empty(),
        "at the end: {s:?}"
    );
    ensure!(
        max >= 1 && max <= u64::from(limit),
        "the most running jobs of one key seen in {samples} samples was {max}"
    );
    // No head-of-line blocking: the hot key's backlog was first in line, yet the other keys'
    // jobs flowed while it was at its limit. Held back behind it, none of them would start
    // before the hot key's last; three quarters of them started before three quarters of
    // the hot key's had (in practice nearly all before a third: they have six times the
    // places; the bound is loose for loaded machines).
    let mut hot_starts: Vec<_> = claimed
        .iter()
        .filter(|(id, _)| key_of[id] == "hot")
        .map(|c| c.1)
        .collect();
    hot_starts.sort();
    let mark = hot_starts[HOT * 3 / 4];
    let cold_before = claimed
        .iter()
        .filter(|(id, at)| key_of[id] != "hot" && *at < mark)
        .count();
    ensure!(
        cold_before >= COLD_KEYS * PER_COLD * 3 / 4,
        "only {cold_before} of the other keys' {} jobs started before the hot key's {}th \
         start: jobs behind a saturated key were held back",
        COLD_KEYS * PER_COLD,
        HOT * 3 / 4
    );
    Ok(())
}

/// A key limit of 1 under 64 claimers on two queue values.
pub async fn keys_limit_1_holds_under_64_claimers(ctx: Ctx) -> anyhow::Result<()> {
    key_limit_holds(ctx, 1).await
}

/// A key limit of 3 under 64 claimers on two queue values.
pub async fn keys_limit_3_holds_under_64_claimers(ctx: Ctx) -> anyhow::Result<()> {
    key_limit_holds(ctx, 3).await
}

/// An expired lease frees its key's place at its expiry, before any rescue; while a key is at
/// its limit the jobs of another key and jobs without a key are still given out.
pub async fn keys_expired_lease_frees_its_key(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    q.set_key_limit("kexp", Some(1)).await?;
    let a = push_keyed(&q, "kexp", "a", 3).await?;
    // Long enough for the claims below (the turn of jobs without a key comes about once a
    // second per process), short enough to wait for.
    let first = pop(&q, "kexp", 5, SHORT_LEASE * 16, "w1").await?;
    ensure!(
        first.len() == 1 && a.contains(&first[0].job.id),
        "the first claim got {} jobs",
        first.len()
    );
    let none = pop(&q2, "kexp", 5, LONG_LEASE, "w2").await?;
    ensure!(
        none.is_empty(),
        "{} jobs of key a given out past its limit of 1",
        none.len()
    );
    // Another key and a job without a key go out while key a is full.
    let b = push_keyed(&q, "kexp", "b", 1).await?;
    let plain = q.push(job("kexp", json!({ "plain": true }))).await?;
    let mut other: Vec<JobId> = Vec::new();
    for _ in 0..40 {
        other.extend(
            pop(&q2, "kexp", 5, LONG_LEASE, "w2")
                .await?
                .iter()
                .map(|l| l.job.id),
        );
        if other.len() >= 2 {
            break;
        }
        // The turn of jobs without a key is looked at about once a second per process.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    other.sort();
    let mut want = vec![b[0], plain];
    want.sort();
    ensure!(
        other == want,
        "while key a was full the claims gave out {other:?}, expected key b's job and the \
         job without a key {want:?}"
    );
    sleep_until_db(&q, first[0].lease.expires_at).await?;
    expect_state(&q, first[0].job.id, JobState::Running).await?;
    let second = pop(&q2, "kexp", 5, LONG_LEASE, "w2").await?;
    ensure!(
        second.len() == 1 && a.contains(&second[0].job.id) && second[0].job.id != first[0].job.id,
        "after key a's lease expired the claim got {} jobs (expected one more of key a)",
        second.len()
    );
    let s = stats_of(&q, "kexp").await?;
    let hot = s
        .hot_keys
        .iter()
        .find(|h| h.key == "a")
        .with_context(|| format!("key a is not among the hot keys: {s:?}"))?;
    ensure!(
        hot.running == 1 && hot.waiting == 1,
        "key a: {hot:?} (expected 1 running, 1 waiting)"
    );
    Ok(())
}

/// Fair shares: 2,000 jobs of key A are queued, then key B pushes 100. Claims of 10 take turns
/// across the keys, so B's jobs are all given out within 21 claims (B gets every other claim),
/// and none of A's jobs is lost or given out twice.
pub async fn keys_fair_shares_serve_a_new_key_within_rounds(ctx: Ctx) -> anyhow::Result<()> {
    const DEEP: usize = 2_000;
    const NEW: usize = 100;
    const CLAIM: usize = 10;
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    q.set_fair_shares("fair", true).await?;
    push_keyed(&q, "fair", "A", DEEP).await?;
    // A worker was already draining A.
    let early = pop(&q, "fair", CLAIM, LONG_LEASE, "w").await?;
    ensure!(early.len() == CLAIM, "the first claim got {}", early.len());
    let b: HashSet<JobId> = push_keyed(&q, "fair", "B", NEW)
        .await?
        .into_iter()
        .collect();
    let mut b_seen = 0;
    let mut rounds = 0;
    let mut seen = HashSet::new();
    while b_seen < NEW {
        rounds += 1;
        ensure!(
            rounds <= 2 * NEW / CLAIM + 1,
            "after {} claims of {CLAIM}, {b_seen} of key B's {NEW} jobs were given out",
            rounds - 1
        );
        let qv = if rounds % 2 == 0 { &q } else { &q2 };
        let got = pop(qv, "fair", CLAIM, LONG_LEASE, "w").await?;
        ensure!(got.len() == CLAIM, "claim {rounds} got {}", got.len());
        for l in &got {
            ensure!(seen.insert(l.job.id), "job {} given out twice", l.job.id);
            if b.contains(&l.job.id) {
                b_seen += 1;
            }
        }
    }
    let s = stats_of(&q, "fair").await?;
    ensure!(
        s.fair_shares && s.running == (CLAIM * (rounds + 1)) as u64,
        "stats: {s:?}"
    );
    Ok(())
}

/// A key rate limit of 3 starts per 300 ms window per key, under 64 claimers on two queue
/// values: counted from the starts the database gave out, no key has more than 3 in any
/// window, both keys progress in the same windows, and every job runs once.
pub async fn keys_rate_limit_holds_per_key(ctx: Ctx) -> anyhow::Result<()> {
    const PER_KEY: usize = 12;
    const LIMIT: u32 = 3;
    let period = Duration::from_millis(300);
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    q.set_key_rate_limit("krate", Some(RateLimit::new(LIMIT, period)?))
        .await?;
    let mut key_of: HashMap<JobId, String> = HashMap::new();
    for key in ["a", "b"] {
        for id in push_keyed(&q, "krate", key, PER_KEY).await? {
            key_of.insert(id, key.to_owned());
        }
    }
    let claimed = run_64_claimers(&q, &q2, "krate", 2 * PER_KEY, Duration::from_secs(60)).await?;
    let unique: HashSet<JobId> = claimed.iter().map(|c| c.0).collect();
    ensure!(
        unique.len() == claimed.len() && claimed.len() == 2 * PER_KEY,
        "{} deliveries of {} distinct jobs, {} pushed",
        claimed.len(),
        unique.len(),
        2 * PER_KEY
    );
    let period_us = i64::try_from(period.as_micros())?;
    let mut windows: HashMap<(String, i64), u32> = HashMap::new();
    for (id, start) in &claimed {
        let w = start.timestamp_micros().div_euclid(period_us);
        *windows.entry((key_of[id].clone(), w)).or_default() += 1;
    }
    for ((key, w), n) in &windows {
        ensure!(
            *n <= LIMIT,
            "{n} jobs of key {key} started in window {w} under a key rate limit of {LIMIT}"
        );
    }
    // Counted per key, not for the queue: some window held more than LIMIT starts in all
    // (both keys started jobs in it).
    let mut per_window: HashMap<i64, u32> = HashMap::new();
    for ((_, w), n) in &windows {
        *per_window.entry(*w).or_default() += n;
    }
    let most = per_window.values().max().copied().unwrap_or(0);
    ensure!(
        most > LIMIT,
        "no window held more than {most} starts of the two keys: the limit held them together"
    );
    let s = stats_of(&q, "krate").await?;
    ensure!(
        s.key_rate_limit == Some(RateLimit::new(LIMIT, period)?) && s.completed == 24,
        "stats: {s:?}"
    );
    Ok(())
}

/// Retention deletes the key rate counts of windows that ended a whole window ago, and only
/// those: a key whose count is in the current window keeps it (its next job waits for the next
/// window); the deleted rows are gone (a later round finds nothing left of a queue whose keys
/// never ran again).
pub async fn keys_retention_prunes_ended_rate_windows(ctx: Ctx) -> anyhow::Result<()> {
    let period = Duration::from_secs(1);
    let period_us = i64::try_from(period.as_micros())?;
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    q.set_key_rate_limit("kprune", Some(RateLimit::new(1, period)?))
        .await?;
    // A second queue whose two keys run once, in the first window, and never again: only the
    // prune can make their counts go.
    q.set_key_rate_limit("kprune_idle", Some(RateLimit::new(1, period)?))
        .await?;
    let mut key_of: HashMap<JobId, &str> = HashMap::new();
    for key in ["a", "b", "c", "d", "e"] {
        for id in push_keyed(&q, "kprune", key, 3).await? {
            key_of.insert(id, key);
        }
    }
    for key in ["x", "y"] {
        push_keyed(&q, "kprune_idle", key, 1).await?;
    }
    let keys_of = |jobs: &[queue_core::Leased]| -> Vec<&str> {
        let mut keys: Vec<&str> = jobs.iter().map(|l| key_of[&l.job.id]).collect();
        keys.sort_unstable();
        keys
    };
    let first = pop(&q, "kprune", 10, LONG_LEASE, "w1").await?;
    ensure!(
        keys_of(&first) == ["a", "b", "c", "d", "e"],
        "one job of each key in the first window, got keys {:?}",
        keys_of(&first)
    );
    let idle = pop(&q, "kprune_idle", 10, LONG_LEASE, "w1").await?;
    ensure!(idle.len() == 2, "both idle keys start: {}", idle.len());
    let rules = Retention::off().interval(Duration::from_secs(1));
    let report = q
        .run_retention(&rules)
        .await?
        .context("the first round did not run")?;
    ensure!(
        report.key_rate_counts == 0,
        "counts of the current (or just ended) window deleted: {report:?}"
    );
    // Two windows on, the first window's counts have ended a whole window ago.
    let w = q.now().await?.timestamp_micros().div_euclid(period_us);
    let at = chrono::DateTime::from_timestamp_micros((w + 2) * period_us)
        .context("window start out of range")?;
    sleep_until_db(&q, at).await?;
    // The rotation goes on after e: key a's next job, counted in this window.
    let a = pop(&q, "kprune", 1, LONG_LEASE, "w1").await?;
    ensure!(
        keys_of(&a) == ["a"],
        "expected key a next, got {:?}",
        keys_of(&a)
    );
    let window = |t: chrono::DateTime<chrono::Utc>| t.timestamp_micros().div_euclid(period_us);
    let a_window = window(a[0].lease.expires_at - chrono::Duration::from_std(LONG_LEASE)?);
    let report = eventually(Duration::from_secs(5), "a second retention round", || {
        let (q, rules) = (q.clone(), rules.clone());
        async move { Ok(q.run_retention(&rules).await?) }
    })
    .await?;
    ensure!(
        report.key_rate_counts == 4 + 2,
        "expected the counts of keys b to e and x, y deleted, and a's kept: {report:?}"
    );
    let rest = pop(&q, "kprune", 10, LONG_LEASE, "w1").await?;
    let same_window = window(q.now().await?) == a_window;
    let keys = keys_of(&rest);
    ensure!(
        keys == ["b", "c", "d", "e"] || (!same_window && keys == ["a", "b", "c", "d", "e"]),
        "after the prune, keys b to e start again and a (its count kept) waits for the next \
         window: got keys {keys:?} (same window as a's job: {same_window})"
    );
    // Removing kprune's limit forgets its counts; what a later round could still find is
    // kprune_idle's, stale for seconds now, had the prune only said it deleted them.
    q.set_key_rate_limit("kprune", None).await?;
    let report = eventually(Duration::from_secs(5), "a third retention round", || {
        let (q, rules) = (q.clone(), rules.clone());
        async move { Ok(q.run_retention(&rules).await?) }
    })
    .await?;
    ensure!(
        report.key_rate_counts == 0,
        "counts of kprune_idle were still there after the prune: {report:?}"
    );
    Ok(())
}

/// Bad key limits and keys: a clear error naming the field, nothing stored.
pub async fn keys_bad_input_stores_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    for (what, r) in [
        ("0", q.set_key_limit("kbad", Some(0)).await),
        (
            "above the maximum",
            q.set_key_limit("kbad", Some(MAX_CONCURRENCY_LIMIT + 1))
                .await,
        ),
    ] {
        ensure!(
            invalid_field(&r) == Ok("key_limit".into()),
            "key limit {what}: {r:?}"
        );
    }
    for (what, rate, field) in [
        (
            "0 starts",
            RateLimit {
                limit: 0,
                period: Duration::from_secs(1),
            },
            "key_rate_limit.limit",
        ),
        (
            "1 ms",
            RateLimit {
                limit: 5,
                period: Duration::from_millis(1),
            },
            "key_rate_limit.period",
        ),
    ] {
        let r = q.set_key_rate_limit("kbad", Some(rate)).await;
        ensure!(
            invalid_field(&r) == Ok(field.into()),
            "key rate {what}: {r:?}"
        );
    }
    let r = q.set_key_limit("bad queue name!", Some(1)).await;
    ensure!(invalid_field(&r) == Ok("queue".into()), "bad queue: {r:?}");
    let r = q.set_fair_shares("", true).await;
    ensure!(
        invalid_field(&r) == Ok("queue".into()),
        "empty queue: {r:?}"
    );
    ensure!(
        q.controls().await?.iter().all(|c| c.queue != "kbad"),
        "a refused key limit left a row"
    );
    let long = "k".repeat(201);
    for (what, key) in [("empty", ""), ("NUL", "a\0b"), ("201 characters", &long)] {
        let r = q.push(job("kbad", json!({})).concurrency_key(key)).await;
        ensure!(
            invalid_field(&r) == Ok("concurrency_key".into()),
            "{what} key: {r:?}"
        );
        let batch: Vec<NewJob> = vec![
            job("kbad", json!({ "ok": true })).concurrency_key("fine"),
            job("kbad", json!({})).concurrency_key(key),
        ];
        let r = q.push_batch(batch).await;
        ensure!(
            invalid_field(&r) == Ok("jobs[1].concurrency_key".into()),
            "{what} key in a batch: {r:?}"
        );
    }
    // The longest key is stored and claimed as it is.
    let longest = "é".repeat(200);
    q.set_key_limit("kbad", Some(1)).await?;
    let id = q
        .push(job("kbad", json!({})).concurrency_key(longest.as_str()))
        .await?;
    let got = pop(&q, "kbad", 5, LONG_LEASE, "w").await?;
    ensure!(
        got.len() == 1 && got[0].job.id == id,
        "only the valid job was to be stored and claimed: got {}",
        got.len()
    );
    let s = stats_of(&q, "kbad").await?;
    ensure!(
        s.hot_keys.len() == 1 && s.hot_keys[0].key == longest && s.available == 0,
        "stats: {s:?}"
    );
    Ok(())
}
