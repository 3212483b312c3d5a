//! A worker's acknowledgements: completions in batches (alone, or carried by the next claim),
//! and acknowledgements of leases no longer held, which are counted and change nothing.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{gated, noop, until, Db, BATCH_ACKS, CLAIMS, Q};
use dbqueue_memory::{Statement, Times};
use queue_core::{JobState, PopRequest, Queue};
use serde_json::json;

#[tokio::test(start_paused = true)]
async fn completes_every_job_with_batched_acks() {
    let db = Db::new().await;
    db.faults.latency(BATCH_ACKS, Duration::from_millis(2));
    let ids = db.push_n(2000, json!({"n": 1})).await;
    let handle = db
        .builder()
        .concurrency(64)
        .prefetch(64)
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(60), || counters.completed() == 2000).await;
    let report = handle.shutdown(Duration::from_secs(5)).await;
    assert_eq!(report.counters.completed, 2000);
    assert_eq!(report.counters.claimed, 2000);
    assert!(report.all_settled());
    for id in ids {
        let job = db.job(id).await;
        assert_eq!((job.state, job.attempts), (JobState::Completed, 1));
        assert!(job.lease_expires_at.is_none());
    }
    let batches = db.faults.calls(BATCH_ACKS);
    assert!(
        batches <= 2000 / 10,
        "acks were not batched: {batches} statements completed 2000 jobs"
    );
    assert_eq!(
        db.faults.calls(Statement::JobComplete),
        0,
        "none one by one"
    );
    assert_eq!(
        db.faults
            .calls(Statement::JobFailRetry | Statement::JobFailDead),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completes_every_job_on_a_multi_threaded_runtime() {
    let db = Db::new().await;
    let ids = db.push_n(5000, json!(null)).await;
    let handle = db
        .builder()
        .concurrency(32)
        .prefetch(50)
        .pop_concurrency(2)
        .handler_fn(noop())
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(30), || counters.completed() == 5000).await;
    let report = handle.shutdown(Duration::from_secs(5)).await;
    assert!(report.all_settled());
    assert_eq!(report.counters.claimed, 5000, "each job claimed once");
    assert_eq!(db.count(JobState::Completed).await, 5000);
    for id in ids {
        assert_eq!(db.job(id).await.attempts, 1);
    }
    assert!(db.faults.calls(BATCH_ACKS) < 5000);
    assert_eq!(db.faults.calls(Statement::JobComplete), 0);
}

/// Jobs cancelled while their handlers run end with the cancellation: their acknowledgements,
/// in the same batches as the others', are counted as lost leases and complete nothing; the
/// worker goes on.
#[tokio::test(start_paused = true)]
async fn acks_of_lost_leases_are_counted_not_fatal() {
    let db = Db::new().await;
    let cancelled = db.push_n(4, json!({"cancel": true})).await;
    let kept = db.push_n(4, json!({"cancel": false})).await;
    let other = db.other.clone();
    let handle = db
        .builder()
        .concurrency(8)
        .rescue_interval(None)
        .handler_fn(move |ctx| {
            let other = other.clone();
            async move {
                if ctx.job.payload_value()["cancel"] == json!(true) {
                    // An operator cancels the job while its handler runs.
                    other.cancel(ctx.id()).await.unwrap();
                }
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || {
        counters.lease_lost() == 4 && counters.completed() == 4
    })
    .await;
    // Not fatal: the worker runs what comes next.
    let next = db.push_n(1, json!({"cancel": false})).await[0];
    until(Duration::from_secs(1), || counters.completed() == 5).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.lease_lost, 4);
    assert!(report.all_settled());
    for id in cancelled {
        assert_eq!(db.job(id).await.state, JobState::Cancelled);
    }
    for id in kept.into_iter().chain([next]) {
        assert_eq!(db.job(id).await.state, JobState::Completed);
    }
    assert_eq!(db.faults.calls(Statement::JobComplete), 0, "all in batches");
}

/// The worker is cut off long enough for a job's lease to run out; another process rescues
/// and takes the job. The worker's acknowledgement, sent once its handler ends, finds the
/// lease gone: counted as lost, and the job stays the other holder's.
#[tokio::test(start_paused = true)]
async fn an_ack_after_another_worker_took_the_job_changes_nothing() {
    let db = Db::new().await;
    let id = db.push_n(1, json!({})).await[0];
    let gate = Arc::new(tokio::sync::Notify::new());
    let handle = db
        .builder()
        .concurrency(1)
        .lease(Duration::from_secs(1))
        .heartbeat(Duration::from_millis(300))
        .rescue_interval(None)
        .handler_fn(gated(gate.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.claimed() == 1).await;
    // Neither the heartbeat nor a claim of the worker's gets through; acknowledgements do.
    db.faults
        .unavailable(CLAIMS | Statement::JobExtend, Times::UntilCleared);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(db.other.rescue_expired().await.unwrap(), 1);
    let taken = db
        .other
        .pop(PopRequest::new(Q).worker("other"))
        .await
        .unwrap();
    assert_eq!(taken[0].job.id, id);
    // The handler ends before its heartbeat learns anything.
    gate.notify_one();
    until(Duration::from_secs(1), || counters.lease_lost() == 1).await;
    db.faults.clear();
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.completed, 0);
    assert!(report.all_settled(), "{report:?}");
    assert!(
        db.faults.calls(Statement::JobCompleteMany) >= 1,
        "acknowledged in a batch"
    );
    let job = db.job(id).await;
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.worker.as_deref(), Some("other"));
    assert_eq!(job.attempts, 2);
    // The new holder's lease is intact.
    db.other.ack(&taken[0].lease).await.unwrap();
    assert_eq!(db.job(id).await.state, JobState::Completed);
}
