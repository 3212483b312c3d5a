//! A worker's shutdown: what it finishes, what it gives back (and how the jobs are stored
//! then), and what it does not wait for.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{forever, gated, noop, until, until_stored, Db};
use dbqueue_memory::Statement;
use queue_core::JobState;
use serde_json::json;

#[tokio::test(start_paused = true)]
async fn shutdown_finishes_quick_handlers_and_releases_overdue_ones() {
    let db = Db::new().await;
    let quick = db.push_n(3, json!({"ms": 500})).await;
    let slow = db.push_n(3, json!({"ms": 3_600_000})).await;
    let waiting = db.push_n(4, json!({"ms": 1})).await;
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = dropped.clone();
    struct DropCount(Arc<AtomicUsize>);
    impl Drop for DropCount {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let handle = db
        .builder()
        .concurrency(6)
        .handler_fn(move |ctx| {
            let guard = DropCount(d.clone());
            async move {
                let ms = ctx.job.payload_value()["ms"].as_u64().unwrap();
                tokio::time::sleep(Duration::from_millis(ms)).await;
                drop(guard);
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    // Six run (the first six pushed: equal priorities and run times go by id); the other four
    // wait in the buffer (prefetch 6).
    until(Duration::from_secs(1), || counters.claimed() == 10).await;
    assert_eq!(db.count(JobState::Running).await, 10);
    let report = handle.shutdown(Duration::from_secs(2)).await;
    assert_eq!(report.aborted, 3);
    assert_eq!(report.counters.completed, 3);
    assert_eq!(report.counters.released, 7, "3 stopped and 4 buffered");
    assert!(report.all_settled(), "{report:?}");
    // The aborted handlers' futures were dropped.
    assert_eq!(dropped.load(Ordering::SeqCst), 6);
    for id in quick {
        let job = db.job(id).await;
        assert_eq!((job.state, job.attempts), (JobState::Completed, 1));
    }
    let now = db.now().await;
    for id in slow.iter().chain(&waiting) {
        let job = db.job(*id).await;
        assert_eq!(job.state, JobState::Pending, "{id}");
        assert_eq!(job.attempts, 0, "a released attempt is not counted");
        assert!(job.run_at <= now, "due again at once");
        assert_eq!((job.worker, job.lease_expires_at), (None, None));
        assert!(job.errors.is_empty(), "a release is no failure");
    }
    assert_eq!(db.count(JobState::Running).await, 0);
}

#[tokio::test(start_paused = true)]
async fn jobs_claimed_while_shutting_down_are_released_unstarted() {
    let db = Db::new().await;
    db.faults
        .latency(Statement::JobClaim, Duration::from_secs(1));
    let ids = db.push_n(8, json!({})).await;
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let handle = db
        .builder()
        .concurrency(8)
        .handler_fn(move |_ctx| {
            r.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        })
        .build()
        .unwrap()
        .start();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(db.faults.calls(Statement::JobClaim), 1);
    assert_eq!(
        db.faults.running(Statement::JobClaim),
        1,
        "the claim is in flight"
    );
    let report = handle.shutdown(Duration::from_secs(10)).await;
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(report.counters.claimed, 8);
    assert_eq!(report.counters.released, 8);
    assert!(report.all_settled());
    for id in ids {
        let job = db.job(id).await;
        assert_eq!((job.state, job.attempts), (JobState::Pending, 0));
    }
    assert_eq!(
        db.faults.calls(Statement::JobClaim),
        1,
        "no claim after the shutdown began"
    );
    assert_eq!(db.faults.calls(Statement::JobRelease), 8);
}

#[tokio::test(start_paused = true)]
async fn a_claim_slower_than_the_deadline_is_awaited_and_its_jobs_released() {
    let db = Db::new().await;
    db.faults
        .latency(Statement::JobClaim, Duration::from_secs(1));
    let ids = db.push_n(5, json!({})).await;
    let handle = db.builder().handler_fn(noop()).build().unwrap().start();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(db.faults.running(Statement::JobClaim), 1);
    let report = handle.shutdown(Duration::from_millis(100)).await;
    // The claim ran after the deadline; what it claimed was given back, not left running.
    assert!(report.elapsed >= Duration::from_millis(800), "{report:?}");
    assert_eq!(report.counters.claimed, 5);
    assert_eq!(report.counters.released, 5);
    assert!(report.all_settled(), "{report:?}");
    for id in ids {
        let job = db.job(id).await;
        assert_eq!((job.state, job.attempts), (JobState::Pending, 0), "{id}");
    }
}

#[tokio::test(start_paused = true)]
async fn completions_a_claim_carries_past_the_deadline_are_stored_and_counted() {
    let db = Db::new().await;
    // Every claim that carries completions takes a second.
    db.faults
        .latency(Statement::JobCompleteAndClaim, Duration::from_secs(1));
    db.push_n(200, json!({})).await;
    let handle = db
        .builder()
        .concurrency(4)
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    until(Duration::from_secs(10), || {
        db.faults.running(Statement::JobCompleteAndClaim) > 0
    })
    .await;
    let report = handle.shutdown(Duration::from_millis(10)).await;
    assert!(report.all_settled(), "{report:?}");
    assert_eq!(db.count(JobState::Running).await, 0);
    let completed = db.count(JobState::Completed).await;
    assert!(completed > 0);
    assert_eq!(report.counters.completed, completed, "{report:?}");
    assert_eq!(
        db.count(JobState::Pending).await + completed,
        200,
        "every job completed or given back"
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_does_not_wait_long_past_the_deadline_for_a_hanging_pop() {
    let db = Db::new().await;
    db.faults
        .latency(Statement::JobClaim, Duration::from_secs(3600));
    db.push_n(5, json!({})).await;
    // Two queues, each with its claim hanging: one wait for both.
    let handle = db
        .builder()
        .queue("second", 2)
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(db.faults.running(Statement::JobClaim), 2);
    let report = handle.shutdown(Duration::from_secs(2)).await;
    // The handlers' deadline, then five seconds for the database calls in flight.
    assert!(report.elapsed < Duration::from_secs(8), "{report:?}");
    assert_eq!(report.counters.claimed, 0);
    // The claim was dropped before it ran: nothing is held by the stopped worker.
    assert_eq!(db.faults.running(Statement::JobClaim), 0);
    assert_eq!(db.count(JobState::Pending).await, 5);
    assert_eq!(db.count(JobState::Running).await, 0);
}

#[tokio::test(start_paused = true)]
async fn a_buffered_job_is_released_when_the_worker_stops() {
    let db = Db::new().await;
    let ids = db.push_n(5, json!({})).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let handle = db
        .builder()
        .concurrency(2)
        .prefetch(3)
        .handler_fn(gated(gate.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    // Two run, two wait in the buffer: until a first job has run, the claims (and the buffer)
    // are no larger than the concurrency, whatever the prefetch allows.
    until(Duration::from_secs(1), || counters.claimed() == 4).await;
    assert_eq!(db.count(JobState::Running).await, 4);
    let closer = tokio::spawn(async move {
        loop {
            gate.notify_waiters();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let report = handle.shutdown(Duration::from_secs(5)).await;
    closer.abort();
    assert!(report.all_settled(), "{report:?}");
    let c = report.counters;
    // A slot that freed before the stop may have claimed the fifth job too.
    assert!(c.claimed >= 4, "{report:?}");
    assert_eq!(c.completed + c.released, c.claimed, "{report:?}");
    assert!(c.released >= 1, "{report:?}");
    let mut completed = 0;
    for id in ids {
        let job = db.job(id).await;
        match job.state {
            JobState::Completed => completed += 1,
            // Released unstarted, or never claimed.
            JobState::Pending => assert_eq!(job.attempts, 0, "{job:?}"),
            _ => panic!("{job:?}"),
        }
    }
    assert_eq!(completed, c.completed);
    assert_eq!(db.count(JobState::Running).await, 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_handle_shuts_down_in_the_background() {
    let db = Db::new().await;
    let id = db.push_n(1, json!({})).await[0];
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = db
        .builder()
        .shutdown_timeout(Duration::from_secs(1))
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 1).await;
    drop(handle);
    until(Duration::from_secs(3), || counters.released() == 1).await;
    assert!(dropped.load(Ordering::SeqCst));
    let job = db.job(id).await;
    assert_eq!((job.state, job.attempts), (JobState::Pending, 0));
}

#[tokio::test(start_paused = true)]
async fn run_until_stops_on_the_signal() {
    let db = Db::new().await;
    db.push_n(50, json!({})).await;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    // A handler still running when the signal comes finishes within the shutdown timeout.
    let worker = db
        .builder()
        .shutdown_timeout(Duration::from_secs(5))
        .handler_fn(move |ctx| async move {
            if ctx.job.payload_value() == json!("last") {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Ok(())
        })
        .build()
        .unwrap();
    let run = tokio::spawn(worker.run_until(async move {
        let _ = rx.await;
    }));
    until_stored(Duration::from_secs(5), || async {
        db.count(JobState::Completed).await == 50
    })
    .await;
    let last = db
        .push(queue_core::NewJob::new(common::Q, &"last").unwrap())
        .await;
    until_stored(Duration::from_secs(1), || async {
        db.job(last).await.state == JobState::Running
    })
    .await;
    tx.send(()).unwrap();
    let report = run.await.unwrap();
    assert_eq!(report.counters.completed, 51);
    assert_eq!(report.aborted, 0);
    assert!(report.all_settled());
    assert_eq!(db.job(last).await.state, JobState::Completed);
}
