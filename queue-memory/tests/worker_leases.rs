//! Leases under a worker: the heartbeat that keeps a long job's lease, a handler stopped when
//! its lease is lost or its job cancelled, the rescue of expired leases, and the jobs that wait
//! in the worker's buffer while their leases run.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{forever, noop, until, Db, Q};
use dbqueue_memory::{Statement, Statements, Times};
use queue_core::{Error, JobState, PopRequest, Queue};
use serde_json::json;

/// The statements a holder records a job's end with (completion, failure, release).
const TRANSITIONS: Statements = Statements::of(&[
    Statement::JobComplete,
    Statement::JobCompleteMany,
    Statement::JobCompleteAndClaim,
    Statement::JobFailRetry,
    Statement::JobFailDead,
    Statement::JobSnooze,
    Statement::JobRelease,
]);

#[tokio::test(start_paused = true)]
async fn heartbeat_extends_the_lease_of_a_long_job() {
    let db = Db::new().await;
    let id = db.push_n(1, json!({})).await[0];
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s, other) = (seen.clone(), db.other.clone());
    let handle = db
        .builder()
        .lease(Duration::from_secs(1))
        .heartbeat(Duration::from_millis(300))
        // A rescuer that would take the job back if its lease ran out.
        .rescue_interval(Some(Duration::from_millis(100)))
        .handler_fn(move |ctx| {
            let (s, other) = (s.clone(), other.clone());
            async move {
                let stored = || async { other.get(ctx.id()).await.unwrap().unwrap() };
                let at_start = stored().await.lease_expires_at;
                s.lock().unwrap().push((ctx.lease(), at_start));
                tokio::time::sleep(Duration::from_secs(5)).await;
                let at_end = stored().await.lease_expires_at;
                s.lock().unwrap().push((ctx.lease(), at_end));
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
    assert_eq!(report.counters.rescued, 0);
    let job = db.job(id).await;
    assert_eq!((job.state, job.attempts), (JobState::Completed, 1));
    assert!(job.errors.is_empty(), "never rescued: {:?}", job.errors);
    let extends = db.faults.calls(Statement::JobExtend);
    assert!(
        (10..=20).contains(&extends),
        "{extends} extensions in 5 s at 300 ms"
    );
    let seen = seen.lock().unwrap();
    let ((first, first_stored), (last, last_stored)) = (&seen[0], &seen[1]);
    assert_eq!(first.token, last.token);
    assert!(last.expires_at > first.expires_at + chrono::Duration::seconds(4));
    // The context's lease is the stored one.
    assert_eq!(Some(first.expires_at), *first_stored);
    assert_eq!(Some(last.expires_at), *last_stored);
}

#[tokio::test(start_paused = true)]
async fn a_job_that_finishes_quickly_is_never_extended() {
    let db = Db::new().await;
    let ids = db.push_n(20, json!({})).await;
    let handle = db
        .builder()
        .lease(Duration::from_secs(1))
        .heartbeat(Duration::from_millis(300))
        .handler_fn(|_ctx| async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(())
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.completed() == 20).await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(db.faults.calls(Statement::JobExtend), 0);
    for id in ids {
        assert_eq!(db.job(id).await.state, JobState::Completed);
    }
}

/// The worker's extensions do not get through for long enough that its lease runs out;
/// another process rescues the job and claims it. Once they get through again, the heartbeat
/// learns the lease is lost and stops the handler, and the worker writes nothing with it.
#[tokio::test(start_paused = true)]
async fn a_lost_lease_stops_the_handler() {
    let db = Db::new().await;
    let id = db.push_n(1, json!({})).await[0];
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = db
        .builder()
        .lease(Duration::from_secs(1))
        .heartbeat(Duration::from_millis(300))
        .rescue_interval(None)
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!dropped.load(Ordering::SeqCst));
    db.faults
        .unavailable(Statement::JobExtend, Times::UntilCleared);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(db.job(id).await.lease_expires_at.unwrap() < db.now().await);
    assert_eq!(db.other.rescue_expired().await.unwrap(), 1);
    let taken = db
        .other
        .pop(PopRequest::new(Q).worker("other"))
        .await
        .unwrap();
    assert_eq!(taken[0].job.id, id);
    assert!(
        !dropped.load(Ordering::SeqCst),
        "the worker cannot know yet"
    );
    db.faults.clear();
    until(Duration::from_secs(2), || counters.lease_lost() == 1).await;
    assert!(dropped.load(Ordering::SeqCst), "the handler was stopped");
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert!(report.all_settled());
    assert_eq!(report.counters.completed, 0);
    assert_eq!(report.counters.released, 0);
    // Nothing was written with the lost lease: the new holder still has the job.
    let job = db.job(id).await;
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.worker.as_deref(), Some("other"));
    assert_eq!(job.attempts, 2);
    assert_eq!(db.faults.calls(TRANSITIONS), 0);
    db.other.ack(&taken[0].lease).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_job_stops_its_handler() {
    let db = Db::new().await;
    let id = db.push_n(1, json!({})).await[0];
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = db
        .builder()
        .lease(Duration::from_secs(1))
        .heartbeat(Duration::from_millis(300))
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 1).await;
    db.other.cancel(id).await.unwrap();
    until(Duration::from_secs(2), || counters.lease_lost() == 1).await;
    assert!(dropped.load(Ordering::SeqCst));
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert!(report.all_settled());
    assert_eq!(db.job(id).await.state, JobState::Cancelled);
    assert_eq!(db.faults.calls(TRANSITIONS), 0);
}

#[tokio::test(start_paused = true)]
async fn the_rescuer_returns_expired_leases() {
    let db = Db::new().await;
    let id = db.push_n(1, json!({})).await[0];
    // A holder that died: another process claimed the job and never finished it.
    let claimed = db
        .other
        .pop(
            PopRequest::new(Q)
                .lease(Duration::from_millis(200))
                .worker("dead"),
        )
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let handle = db
        .builder()
        .rescue_interval(Some(Duration::from_millis(500)))
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(5), || counters.completed() == 1).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.rescued, 1);
    let job = db.job(id).await;
    assert_eq!((job.state, job.attempts), (JobState::Completed, 2));
    // The expired attempt is in the job's history, as the dead holder's.
    assert_eq!(job.errors.len(), 1);
    assert_eq!(job.errors[0].attempt, 1);
    assert_eq!(job.errors[0].worker.as_deref(), Some("dead"));
    assert!(
        job.errors[0].error.contains("lease expired"),
        "{:?}",
        job.errors
    );
    // The dead holder's ack now reports the lost lease, and changes nothing.
    assert!(matches!(
        db.other.ack(&claimed[0].lease).await,
        Err(Error::LeaseLost { .. })
    ));
    assert_eq!(db.job(id).await.finished_at, job.finished_at);
}

#[tokio::test(start_paused = true)]
async fn a_buffered_job_whose_lease_was_lost_is_never_run() {
    let db = Db::new().await;
    let first = db.push_n(1, json!({"hold": true})).await[0];
    let second = db.push_n(1, json!({"hold": false})).await[0];
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gate.clone();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let r = ran.clone();
    let handle = db
        .builder()
        .concurrency(1)
        .prefetch(1)
        .lease(Duration::from_secs(2))
        .heartbeat(Duration::from_millis(500))
        .rescue_interval(None)
        .handler_fn(move |ctx| {
            let (g, r) = (g.clone(), r.clone());
            async move {
                r.lock().unwrap().push(ctx.job.id);
                if ctx.job.payload_value()["hold"] == json!(true) {
                    g.notified().await;
                }
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    // The first runs; the second waits in the buffer while its lease runs out.
    until(Duration::from_secs(1), || counters.claimed() == 2).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Another process rescues it and takes it: the buffered lease is gone.
    assert_eq!(
        db.other.rescue_expired().await.unwrap(),
        1,
        "only the buffered job expired"
    );
    let other = db
        .other
        .pop(PopRequest::new(Q).worker("other"))
        .await
        .unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].job.id, second);
    gate.notify_waiters();
    until(Duration::from_secs(5), || counters.lease_lost() == 1).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(
        *ran.lock().unwrap(),
        vec![first],
        "the job with a lost lease ran"
    );
    assert!(report.all_settled(), "{report:?}");
    assert_eq!(report.counters.completed, 1);
    assert_eq!(db.job(first).await.state, JobState::Completed);
    let job = db.job(second).await;
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.worker.as_deref(), Some("other"));
}

#[tokio::test(start_paused = true)]
async fn a_buffered_job_that_waited_long_is_extended_before_it_starts() {
    let db = Db::new().await;
    db.push_n(2, json!({})).await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gate.clone();
    // What each handler found left of its lease when it started.
    let left = Arc::new(Mutex::new(Vec::new()));
    let (l, other) = (left.clone(), db.other.clone());
    let handle = db
        .builder()
        .concurrency(1)
        .prefetch(1)
        .lease(Duration::from_secs(3))
        .heartbeat(Duration::from_secs(1))
        .rescue_interval(None)
        .handler_fn(move |ctx| {
            let (g, l, other) = (g.clone(), l.clone(), other.clone());
            async move {
                let now = other.now().await.unwrap();
                l.lock().unwrap().push(ctx.lease().expires_at - now);
                g.notified().await;
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 2).await;
    // The running job is kept alive by its heartbeat; the buffered one waits 1.9 s of its 3,
    // which would leave it 1.1 s: less than a heartbeat and a tenth of the lease.
    tokio::time::sleep(Duration::from_millis(1900)).await;
    let extends_before = db.faults.calls(Statement::JobExtend);
    gate.notify_one();
    until(Duration::from_secs(1), || left.lock().unwrap().len() == 2).await;
    assert_eq!(db.faults.calls(Statement::JobExtend), extends_before + 1);
    gate.notify_one();
    until(Duration::from_secs(5), || counters.completed() == 2).await;
    assert_eq!(counters.lease_lost(), 0);
    handle.shutdown(Duration::from_secs(1)).await;
    let left = left.lock().unwrap();
    assert_eq!(
        left[0],
        chrono::Duration::seconds(3),
        "the first started at once"
    );
    assert_eq!(
        left[1],
        chrono::Duration::seconds(3),
        "extended by a whole lease"
    );
}
