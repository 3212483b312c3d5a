//! How a worker claims: never more handlers than its concurrency, never more jobs held than
//! its slots and buffer take, claims in flight as its settings allow, one claim per poll
//! interval when idle, and a push that wakes it at once.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{noop, until, Db, Ping, CLAIMS, Q};
use dbqueue_memory::Statement;
use queue_core::worker::Counters;
use queue_core::{JobState, NewJob, Queue};
use serde_json::json;

/// Watches, every millisecond of Tokio's time, how many jobs a worker holds: claimed and not
/// yet finished by a handler (running, waiting in its buffer). Returns the most it saw.
fn watch_held(
    counters: Arc<Counters>,
    finished: Arc<AtomicU64>,
) -> (tokio::task::JoinHandle<()>, Arc<AtomicU64>) {
    let most = Arc::new(AtomicU64::new(0));
    let m = most.clone();
    let task = tokio::spawn(async move {
        loop {
            let held = counters
                .claimed()
                .saturating_sub(finished.load(Ordering::SeqCst));
            m.fetch_max(held, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    (task, most)
}

#[tokio::test(start_paused = true)]
async fn concurrency_limit_is_never_exceeded_and_pops_fit_free_capacity() {
    let db = Db::new().await;
    db.faults.latency(CLAIMS, Duration::from_millis(3));
    let claims = db.faults.tally(CLAIMS);
    // Handlers of 1 to 20 ms, in a fixed order.
    let jobs = (0..300u64)
        .map(|i| NewJob::new(Q, &json!({ "ms": 1 + i * 7 % 20 })).unwrap())
        .collect();
    let ids = db.queue.push_batch(jobs).await.unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicU64::new(0));
    let (r, p, f) = (running.clone(), peak.clone(), finished.clone());
    let handle = db
        .builder()
        .concurrency(7)
        .prefetch(5)
        .pop_concurrency(3)
        .handler_fn(move |ctx| {
            let (r, p, f) = (r.clone(), p.clone(), f.clone());
            async move {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                let ms = ctx.job.payload_value()["ms"].as_u64().unwrap();
                tokio::time::sleep(Duration::from_millis(ms)).await;
                r.fetch_sub(1, Ordering::SeqCst);
                f.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    let (watcher, held) = watch_held(counters.clone(), finished);
    until(Duration::from_secs(60), || counters.completed() == 300).await;
    watcher.abort();
    handle.shutdown(Duration::from_secs(1)).await;
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= 7, "{peak} handlers ran at once");
    assert!(peak >= 5, "handlers did not run concurrently (peak {peak})");
    let at_once = claims.most_at_once();
    assert!(at_once <= 3, "{at_once} claims at once");
    // Claims ask for what the slots and the buffer have room for, never more.
    let held = held.load(Ordering::SeqCst);
    assert!(held <= 7 + 5, "{held} jobs held");
    assert!(held > 7, "the buffer was never used ({held} held)");
    assert!(claims.calls() >= 300 / 5, "{} claims", claims.calls());
    for id in ids {
        let job = db.job(id).await;
        assert_eq!((job.state, job.attempts), (JobState::Completed, 1));
    }
}

/// Claims in flight grow while they come back full, up to `pop_concurrency`: with room for
/// many small claims, exactly that many run at once; unset, more do.
#[tokio::test(start_paused = true)]
async fn pop_concurrency_caps_the_claims_in_flight() {
    for (cap, expected) in [(Some(3), 3..=3), (None, 6..=16)] {
        let db = Db::new().await;
        db.faults.latency(CLAIMS, Duration::from_millis(10));
        let claims = db.faults.tally(CLAIMS);
        db.push_n(200, json!({})).await;
        let mut builder = db.builder().concurrency(40).prefetch(2);
        if let Some(cap) = cap {
            builder = builder.pop_concurrency(cap);
        }
        let handle = builder
            .handler_fn(|_ctx| async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(())
            })
            .build()
            .unwrap()
            .start();
        let counters = handle.counters();
        until(Duration::from_secs(60), || counters.completed() == 200).await;
        handle.shutdown(Duration::from_secs(1)).await;
        let at_once = claims.most_at_once();
        assert!(
            expected.contains(&at_once),
            "{cap:?}: {at_once} claims at once"
        );
        assert_eq!(db.count(JobState::Completed).await, 200);
    }
}

#[tokio::test(start_paused = true)]
async fn prefetch_one_keeps_a_claim_in_flight_per_free_slot() {
    let db = Db::new().await;
    db.faults.latency(CLAIMS, Duration::from_millis(5));
    let claims = db.faults.tally(CLAIMS);
    db.push_n(400, json!({})).await;
    let finished = Arc::new(AtomicU64::new(0));
    let f = finished.clone();
    let handle = db
        .builder()
        .concurrency(16)
        .prefetch(1)
        .rescue_interval(None)
        .handler_fn(move |_ctx| {
            let f = f.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(40)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    let (watcher, held) = watch_held(counters.clone(), finished);
    until(Duration::from_secs(60), || counters.completed() == 400).await;
    watcher.abort();
    handle.shutdown(Duration::from_secs(1)).await;
    let at_once = claims.most_at_once();
    assert!(
        (8..=16).contains(&at_once),
        "{at_once} one-job claims at once"
    );
    // Each claim is of one job: 400 jobs took at least 400 claims, and the worker held its
    // slots' jobs and one buffered job at most.
    assert!(claims.calls() >= 400, "{} claims", claims.calls());
    let held = held.load(Ordering::SeqCst);
    assert!((16..=16 + 1).contains(&held), "{held} jobs held");
    assert_eq!(db.count(JobState::Completed).await, 400);
}

#[tokio::test(start_paused = true)]
async fn an_idle_worker_makes_at_most_one_claim_per_poll_interval() {
    let db = Db::new().await;
    // A claim that takes a moment, so that claims overlapping would show.
    db.faults.latency(CLAIMS, Duration::from_millis(1));
    let claims = db.faults.tally(CLAIMS);
    let handle = db
        .builder()
        .concurrency(16)
        .prefetch(1)
        .poll_interval(Duration::from_millis(100), Duration::from_millis(100))
        .rescue_interval(None)
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let n = claims.calls();
    // 10 s at one claim per jittered 80..120 ms interval (and 1 ms each): at most 126, never
    // 16 at a time.
    assert!((80..=130).contains(&n), "{n} claims in 10 s");
    assert_eq!(claims.most_at_once(), 1);
    handle.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn an_idle_worker_does_not_spin_and_wakes_on_push() {
    let db = Db::new().await;
    let handle = db
        .builder()
        .poll_interval(Duration::from_millis(50), Duration::from_secs(2))
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let pops = db.faults.calls(Statement::JobClaim);
    // 50 ms doubling to 2 s is about 35 claims in a minute; a hot loop would make thousands.
    assert!((20..=60).contains(&pops), "{pops} claims in an idle minute");
    // Backed off to 2 s, yet a push through the worker's queue value wakes the worker at once.
    let start = tokio::time::Instant::now();
    db.push_n(1, json!({})).await;
    until(Duration::from_secs(5), || counters.completed() == 1).await;
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
    // And so does a push by another process on the store, once the worker backed off again.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let start = tokio::time::Instant::now();
    db.other
        .push(NewJob::new(Q, &json!({})).unwrap())
        .await
        .unwrap();
    until(Duration::from_secs(5), || counters.completed() == 2).await;
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
    handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(db.count(JobState::Completed).await, 2);
}

#[tokio::test(start_paused = true)]
async fn each_queue_keeps_its_own_concurrency() {
    let db = Db::new().await;
    let mut jobs = Vec::new();
    for i in 0..40u32 {
        let queue = if i % 2 == 0 { Q } else { "other" };
        jobs.push(NewJob::of(&Ping { n: i }).unwrap().with_queue(queue));
    }
    db.queue.push_batch(jobs).await.unwrap();
    let running: Arc<Mutex<HashMap<String, (usize, usize)>>> = Arc::default();
    let r = running.clone();
    let handle = db
        .builder()
        .concurrency(2)
        .queue("other", 5)
        .job(move |_: Ping, ctx| {
            let r = r.clone();
            async move {
                let queue = ctx.job.queue.clone();
                {
                    let mut m = r.lock().unwrap();
                    let e = m.entry(queue.clone()).or_default();
                    e.0 += 1;
                    e.1 = e.1.max(e.0);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                r.lock().unwrap().get_mut(&queue).unwrap().0 -= 1;
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(30), || counters.completed() == 40).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let peaks: HashMap<String, usize> = running
        .lock()
        .unwrap()
        .iter()
        .map(|(queue, (_, peak))| (queue.clone(), *peak))
        .collect();
    assert_eq!(peaks[Q], 2, "peak of {Q}");
    assert_eq!(peaks["other"], 5, "peak of other");
    assert_eq!(db.stats_of(Q).await.completed, 20);
    assert_eq!(db.stats_of("other").await.completed, 20);
}

/// Unset, the claims size themselves: they grow well past the concurrency while a backlog of
/// quick jobs lasts (so a drain takes few claims), never past the backend's `max_pop`, and the
/// jobs held never exceed the slots plus one claim.
#[tokio::test(start_paused = true)]
async fn claims_grow_with_a_backlog_of_quick_jobs() {
    let db = Db::new().await;
    db.faults.latency(CLAIMS, Duration::from_millis(1));
    let claims = db.faults.tally(CLAIMS);
    db.push_n(5_000, json!({})).await;
    let finished = Arc::new(AtomicU64::new(0));
    let f = finished.clone();
    let handle = db
        .builder()
        .concurrency(8)
        .handler_fn(move |_ctx| {
            f.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    let (watcher, held) = watch_held(counters.clone(), finished);
    until(Duration::from_secs(60), || counters.completed() == 5_000).await;
    watcher.abort();
    let report = handle.shutdown(Duration::from_secs(1)).await;
    let c = report.counters;
    let max_pop = db.queue.capabilities().limits.max_pop as u64;
    assert!(c.largest_claim > 8 * 4, "{c:?}");
    assert!(c.largest_claim <= max_pop, "{c:?}");
    assert!(claims.calls() < 5_000 / 8 / 4, "{} claims", claims.calls());
    let held = held.load(Ordering::SeqCst);
    assert!(held <= 8 + max_pop, "{held} jobs held");
    assert_eq!(db.count(JobState::Completed).await, 5_000);
}

/// Slow jobs are not hoarded: the claims stay within what the slots run in about a second at
/// the jobs' pace (4 slots, 250 ms jobs: 16 beyond the running ones), whatever the backlog,
/// so that other workers can take the rest; and at first, before a job has run, no larger than
/// the concurrency.
#[tokio::test(start_paused = true)]
async fn claims_of_slow_jobs_stay_within_a_second_of_work() {
    let db = Db::new().await;
    db.push_n(400, json!({})).await;
    let finished = Arc::new(AtomicU64::new(0));
    let f = finished.clone();
    let handle = db
        .builder()
        .concurrency(4)
        .handler_fn(move |_ctx| {
            let f = f.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(250)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    let (watcher, held) = watch_held(counters.clone(), finished);
    until(Duration::from_secs(120), || counters.completed() == 400).await;
    watcher.abort();
    let report = handle.shutdown(Duration::from_secs(1)).await;
    let held = held.load(Ordering::SeqCst);
    assert!(held <= 4 + 16, "{held} jobs held");
    assert!(held > 4, "the buffer was never used ({held} held)");
    assert!(report.counters.largest_claim <= 16, "{report:?}");
}
