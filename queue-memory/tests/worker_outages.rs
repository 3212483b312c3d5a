//! A worker whose database fails it: claims that fail, an outage while handlers run,
//! acknowledgements and extensions that wait out a short one, and panics in the code the
//! worker's own tasks call. No job is lost; the ones whose outcome could not be recorded are
//! rescued once their leases expire.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{gated, noop, until, until_stored, Db, CLAIMS, Q};
use dbqueue_memory::{Statement, Times};
use queue_core::{JobState, PopRequest, Queue};
use serde_json::json;

#[tokio::test(start_paused = true)]
async fn pop_errors_back_off_and_recover() {
    let db = Db::new().await;
    db.faults.unavailable(Statement::JobClaim, Times::Next(4));
    let ids = db.push_n(10, json!({})).await;
    let started = tokio::time::Instant::now();
    let handle = db.builder().handler_fn(noop()).build().unwrap().start();
    let counters = handle.counters();
    until(Duration::from_secs(30), || counters.completed() == 10).await;
    // Four failures, each followed by a pause that doubles from 100 ms (less a fifth at most):
    // the first claim that worked came after 1.2 s at the soonest.
    assert!(
        started.elapsed() >= Duration::from_millis(1200),
        "{:?}",
        started.elapsed()
    );
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.pop_errors, 4);
    assert!(db.faults.calls(CLAIMS) >= 5);
    for id in ids {
        let job = db.job(id).await;
        assert_eq!(
            (job.state, job.attempts),
            (JobState::Completed, 1),
            "a failed claim spends no attempt"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_database_outage_loses_no_job() {
    let db = Db::new().await;
    let ids = db.push_n(30, json!({})).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let handle = db
        .builder()
        .concurrency(10)
        .prefetch(1)
        .lease(Duration::from_secs(2))
        .heartbeat(Duration::from_millis(500))
        .rescue_interval(Some(Duration::from_millis(500)))
        .handler_fn(gated(gate.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    // Ten run and one waits in the buffer (prefetch 1).
    until(Duration::from_secs(1), || counters.claimed() == 11).await;
    // The database goes away while ten handlers run; they finish, but nothing can be recorded.
    db.faults.down();
    gate.notify_waiters();
    until(Duration::from_secs(10), || counters.abandoned() == 10).await;
    // Another process sees them all still running: nothing was recorded, nothing lost.
    assert_eq!(db.count(JobState::Running).await, 11);
    assert_eq!(db.count(JobState::Completed).await, 0);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(counters.pop_errors() > 0);
    assert_eq!(counters.claimed(), 11, "no claim got through");
    // Back up: the rescuer returns the abandoned jobs and every job completes.
    db.faults.up();
    let g = gate.clone();
    let opener = tokio::spawn(async move {
        loop {
            g.notify_waiters();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    until_stored(Duration::from_secs(60), || async {
        db.count(JobState::Completed).await == 30
    })
    .await;
    opener.abort();
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert!(report.all_settled(), "{report:?}");
    assert!(report.counters.rescued >= 10, "{report:?}");
    let mut ran_twice = 0;
    for id in ids {
        let job = db.job(id).await;
        assert_eq!(job.state, JobState::Completed);
        if job.attempts > 1 {
            ran_twice += 1;
            assert!(job.errors.iter().all(|e| e.error.contains("lease expired")));
        }
    }
    assert!(ran_twice >= 10, "the abandoned ones ran again: {ran_twice}");
}

#[tokio::test(start_paused = true)]
async fn a_failed_extension_is_retried_without_stopping_the_handler() {
    let db = Db::new().await;
    let id = db.push_n(1, json!({})).await[0];
    let faults = db.faults.clone();
    let handle = db
        .builder()
        .lease(Duration::from_secs(3))
        .heartbeat(Duration::from_secs(1))
        .rescue_interval(None)
        .handler_fn(move |_ctx| {
            let faults = faults.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(1100)).await;
                // The first extension (at 1 s) worked; the database drops out for a while.
                faults.down();
                tokio::time::sleep(Duration::from_millis(1200)).await;
                faults.up();
                tokio::time::sleep(Duration::from_secs(3)).await;
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.completed() == 1).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.lease_lost, 0);
    let job = db.job(id).await;
    assert_eq!((job.state, job.attempts), (JobState::Completed, 1));
    // At 1 s (ok), 2 s (down), 2.5 s (ok after the outage ended at 2.3 s), then every second
    // until the handler ends at 5.3 s: 3.5 and 4.5.
    assert_eq!(db.faults.calls(Statement::JobExtend), 5);
}

/// An outage shorter than the leases' remaining time costs no re-run: the batch of
/// acknowledgements is tried again through it and lands once the database is back, so every
/// job completes on its first attempt and nothing is abandoned or rescued.
#[tokio::test(start_paused = true)]
async fn acknowledgements_wait_out_a_short_outage() {
    let db = Db::new().await;
    let ids = db.push_n(10, json!({})).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let handle = db
        .builder()
        .concurrency(10)
        .prefetch(1)
        .lease(Duration::from_secs(30))
        .rescue_interval(Some(Duration::from_millis(500)))
        .handler_fn(gated(gate.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 10).await;
    db.faults.down();
    gate.notify_waiters();
    // Three seconds down: longer than the usual tries (0.7 s), well within the leases.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(counters.abandoned(), 0);
    assert_eq!(
        db.count(JobState::Running).await,
        10,
        "nothing recorded yet"
    );
    db.faults.up();
    until_stored(Duration::from_secs(10), || async {
        db.count(JobState::Completed).await == 10
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    let c = report.counters;
    assert_eq!((c.completed, c.abandoned, c.rescued), (10, 0, 0), "{c:?}");
    for id in ids {
        let job = db.job(id).await;
        assert_eq!((job.state, job.attempts), (JobState::Completed, 1));
        assert!(job.errors.is_empty());
    }
}

/// A panic in code the worker's own tasks call (here the driver's, under the queue's claim,
/// rescue and batch acknowledgement) restarts the task or fails that one call; the worker goes
/// on claiming, acknowledging and rescuing.
#[tokio::test(start_paused = true)]
async fn a_panicking_worker_task_is_started_again() {
    let db = Db::new().await;
    // A holder that died: its job must still be rescued after the rescuer panicked twice.
    let orphan = db.push_n(1, json!({})).await[0];
    let dead = db
        .other
        .pop(PopRequest::new(Q).lease(Duration::from_millis(200)))
        .await
        .unwrap();
    assert_eq!(dead[0].job.id, orphan);
    let ids = db.push_n(20, json!({})).await;
    db.faults.panic(Statement::JobClaim, Times::Next(2));
    db.faults.panic(Statement::JobExpired, Times::Next(2));
    db.faults.panic(Statement::JobCompleteMany, Times::Next(1));
    let handle = db
        .builder()
        .rescue_interval(Some(Duration::from_millis(500)))
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until_stored(Duration::from_secs(60), || async {
        db.count(JobState::Completed).await == 21 && counters.rescued() >= 1
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    let c = report.counters;
    // The rescuer panicked twice and was started again; a panicking claim is a failed claim;
    // a panicking batch of acknowledgements leaves its jobs to be rescued and run again.
    assert_eq!(c.restarted, 2, "{c:?}");
    assert_eq!(c.pop_errors, 2, "{c:?}");
    assert!(c.abandoned >= 1, "{c:?}");
    assert_eq!(c.rescued, c.abandoned + 1, "{c:?}");
    assert_eq!(db.job(orphan).await.attempts, 2);
    let ran_twice = {
        let mut n = 0;
        for id in ids {
            let job = db.job(id).await;
            assert_eq!(job.state, JobState::Completed);
            n += u64::from(job.attempts == 2);
        }
        n
    };
    assert_eq!(ran_twice, c.abandoned);
}

/// The claim loop itself panicking (here in the registration for wake-ups that each wait for
/// work makes) is started again, and the worker goes on claiming.
#[tokio::test(start_paused = true)]
async fn a_panicking_dispatcher_is_started_again() {
    let db = Db::new().await;
    db.faults.panic(Statement::Watch, Times::Next(3));
    let handle = db.builder().handler_fn(noop()).build().unwrap().start();
    let counters = handle.counters();
    until(Duration::from_secs(30), || counters.restarted() == 3).await;
    let ids = db.push_n(5, json!({})).await;
    until(Duration::from_secs(30), || counters.completed() == 5).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.restarted, 3, "{:?}", report.counters);
    assert!(db.faults.calls(Statement::Watch) > 3, "it waits again");
    for id in ids {
        assert_eq!(db.job(id).await.state, JobState::Completed);
    }
}
