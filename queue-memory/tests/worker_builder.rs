//! The worker's settings: what the builder refuses, naming the field, and the defaults it
//! derives from the queue's limits and the lease, seen in what a running worker does.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{field_of, forever, noop, until, until_stored, Db, Ping, Q};
use dbqueue_memory::Statement;
use queue_core::worker::{Worker, WorkerBuilder, MAX_CONCURRENCY, MAX_POP_CONCURRENCY};
use queue_core::{JobState, KindOptions, Limits};

fn small_limits() -> Limits {
    Limits {
        max_pop: 100,
        max_batch: 200,
        ..Limits::default()
    }
}

#[tokio::test]
async fn builder_rejects_bad_input_naming_the_field() {
    let db = Db::with_limits(small_limits()).await;
    let b = || db.builder().handler_fn(noop());
    let cases: Vec<(&str, WorkerBuilder)> = vec![
        (
            "queue",
            Worker::builder(db.dyn_queue(), "bad name;").handler_fn(noop()),
        ),
        (
            "queue",
            Worker::builder(db.dyn_queue(), "").handler_fn(noop()),
        ),
        ("concurrency", b().concurrency(0)),
        ("concurrency", b().concurrency(MAX_CONCURRENCY + 1)),
        ("prefetch", b().prefetch(0)),
        ("prefetch", b().prefetch(101)),
        ("pop_concurrency", b().pop_concurrency(0)),
        (
            "pop_concurrency",
            b().pop_concurrency(MAX_POP_CONCURRENCY + 1),
        ),
        ("lease", b().lease(Duration::from_millis(1))),
        ("lease", b().lease(Duration::from_secs(2 * 24 * 3600))),
        (
            "heartbeat",
            b().lease(Duration::from_secs(10))
                .heartbeat(Duration::from_secs(10)),
        ),
        ("heartbeat", b().heartbeat(Duration::ZERO)),
        (
            "poll_interval",
            b().poll_interval(Duration::ZERO, Duration::from_secs(1)),
        ),
        (
            "poll_interval",
            b().poll_interval(Duration::from_secs(2), Duration::from_secs(1)),
        ),
        (
            "poll_interval",
            b().poll_interval(Duration::from_secs(1), Duration::from_secs(7200)),
        ),
        ("rescue_interval", b().rescue_interval(Some(Duration::ZERO))),
        ("worker", b().worker_id("")),
        ("worker", b().worker_id("w".repeat(200))),
        ("ack_batch_size", b().ack_batch_size(0)),
        ("ack_batch_size", b().ack_batch_size(201)),
        (
            "shutdown_timeout",
            b().shutdown_timeout(Duration::from_secs(3 * 24 * 3600)),
        ),
        ("job_timeout", b().job_timeout(Some(Duration::ZERO))),
        ("handler", db.builder()),
    ];
    for (field, b) in cases {
        assert_eq!(field_of(b.build().unwrap_err()), field);
    }
    // At the limits: accepted.
    assert!(b()
        .prefetch(100)
        .ack_batch_size(200)
        .rescue_interval(None)
        .build()
        .is_ok());
}

/// Unset, the prefetch and the batch of acknowledgements follow the queue's limits (a worker
/// of 500 slots on a queue that gives at most 100 jobs a claim and completes at most 200 a
/// batch): every claim and every batch is within them, so none is refused, and no
/// completion falls back to one statement per job.
#[tokio::test(start_paused = true)]
async fn unset_claim_and_batch_sizes_follow_the_queue_s_limits() {
    let db = Db::with_limits(small_limits()).await;
    let ids = db.push_n(1000, serde_json::json!({})).await;
    let handle = db
        .builder()
        .concurrency(500)
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(60), || counters.completed() == 1000).await;
    let report = handle.shutdown(Duration::from_secs(5)).await;
    assert_eq!(report.counters.pop_errors, 0, "{report:?}");
    assert_eq!(report.counters.claimed, 1000, "{report:?}");
    assert_eq!(db.faults.calls(Statement::JobComplete), 0);
    for id in ids {
        let job = db.job(id).await;
        assert_eq!((job.state, job.attempts), (JobState::Completed, 1));
    }
}

/// Unset, the heartbeat is a third of the lease: a job that runs 25 s on the default 30 s
/// lease has it extended at 10 s and at 20 s, each time to 30 s from then.
#[tokio::test(start_paused = true)]
async fn the_heartbeat_is_a_third_of_the_lease_unless_set() {
    let db = Db::new().await;
    let id = db.push_n(1, serde_json::json!({})).await[0];
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = db
        .builder()
        .rescue_interval(None)
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 1).await;
    let claimed = db.job(id).await;
    let claimed_at = claimed.updated_at;
    let lease = |job: &queue_core::Job| job.lease_expires_at.unwrap() - claimed_at;
    assert_eq!(lease(&claimed), chrono::Duration::seconds(30));
    tokio::time::sleep(Duration::from_millis(9_900)).await;
    assert_eq!(db.faults.calls(Statement::JobExtend), 0);
    until_stored(Duration::from_millis(200), || async {
        db.faults.calls(Statement::JobExtend) == 1
    })
    .await;
    let once = lease(&db.job(id).await);
    assert!(
        once >= chrono::Duration::seconds(40) && once < chrono::Duration::milliseconds(40_100),
        "{once}"
    );
    tokio::time::sleep(Duration::from_secs(15)).await;
    assert_eq!(db.faults.calls(Statement::JobExtend), 2, "at 10 s and 20 s");
    let twice = lease(&db.job(id).await);
    assert!(
        twice >= chrono::Duration::seconds(50) && twice < chrono::Duration::milliseconds(50_100),
        "{twice}"
    );
    let report = handle.shutdown(Duration::ZERO).await;
    assert_eq!(report.aborted, 1);
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn the_builder_checks_kinds_and_queues() {
    let db = Db::new().await;
    let b = || db.builder().job(|_: Ping, _ctx| async { Ok(()) });
    let cases: Vec<(&str, WorkerBuilder)> = vec![
        ("queue", b().queue("bad name", 1)),
        ("queue", b().queue(Q, 3)),
        ("concurrency", b().queue("other", 0)),
        ("kind", b().kind_fn("bad kind", KindOptions::new(), noop())),
        ("kind", b().job(|_: Ping, _ctx| async { Ok(()) })),
        (
            "kinds[x].timeout",
            b().kind_fn("x", KindOptions::new().timeout(Duration::ZERO), noop()),
        ),
        (
            "kinds[x].max_snoozes",
            b().kind_fn("x", KindOptions::new().max_snoozes(0), noop()),
        ),
        ("max_snoozes", b().max_snoozes(0)),
    ];
    for (field, b) in cases {
        assert_eq!(field_of(b.build().unwrap_err()), field);
    }
    let w = b().queue("slow", 3).handler_fn(noop()).build().unwrap();
    assert_eq!(w.queues(), vec![(Q, 10), ("slow", 3)]);
    assert_eq!(w.queue_name(), Q);
    assert_eq!(w.kinds(), vec!["ping"]);
}
