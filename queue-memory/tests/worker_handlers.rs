//! Handlers and what their outcomes become in the store: typed payloads, errors, panics,
//! timeouts, routing by kind, snoozes, outputs and metadata, and what a handler is told.

mod common;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{forever, until, Db, Ping, BATCH_ACKS, Q};
use dbqueue_memory::Statement;
use queue_core::worker::{JobContext, JobError};
use queue_core::{JobArgs, JobState, KindOptions, Limits, NewJob, Queue, RetryPolicy};
use serde_json::json;

#[derive(serde::Deserialize)]
struct Email {
    to: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Slow;

impl JobArgs for Slow {
    const KIND: &'static str = "slow";

    fn options() -> KindOptions {
        KindOptions::new()
            .queue("slow")
            .timeout(Duration::from_secs(2))
            .retry_policy(RetryPolicy {
                base: Duration::from_secs(100),
                factor: 1.0,
                max: Duration::from_secs(100),
                jitter: 0.0,
            })
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_becomes_a_failure_with_the_panic_message() {
    let db = Db::new().await;
    let a = db
        .push(NewJob::new(Q, &json!("async")).unwrap().max_attempts(1))
        .await;
    let s = db
        .push(NewJob::new(Q, &json!("sync")).unwrap().max_attempts(1))
        .await;
    let r = db
        .push(NewJob::new(Q, &json!("async")).unwrap().max_attempts(3))
        .await;
    let handle = db
        .builder()
        .handler_fn(|ctx| {
            if ctx.job.payload.get() == "\"sync\"" {
                panic!("sync boom {}", 7);
            }
            async move {
                tokio::task::yield_now().await;
                panic!("async boom {}", 42);
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.panicked() == 3).await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.dead, 2);
    assert_eq!(report.counters.retried, 1);
    let dead_async = db.job(a).await;
    assert_eq!(dead_async.state, JobState::Dead);
    assert!(dead_async
        .last_error
        .unwrap()
        .contains("panicked: async boom 42"));
    let dead_sync = db.job(s).await;
    assert_eq!(dead_sync.state, JobState::Dead);
    assert!(dead_sync.last_error.unwrap().contains("sync boom 7"));
    let retried = db.job(r).await;
    assert_eq!((retried.state, retried.attempts), (JobState::Pending, 1));
    assert!(retried.run_at > db.now().await, "retried after a backoff");
    assert_eq!(retried.errors.len(), 1);
    assert_eq!(retried.errors[0].attempt, 1);
    assert!(retried.errors[0].error.contains("async boom 42"));
}

#[tokio::test(start_paused = true)]
async fn typed_handlers_get_their_payload_and_a_mismatch_is_permanent() {
    let db = Db::new().await;
    let good = db
        .push(NewJob::new(Q, &json!({"to": "a@example.com"})).unwrap())
        .await;
    let bad = db
        .push(
            NewJob::new(Q, &json!({"nope": 1}))
                .unwrap()
                .max_attempts(10),
        )
        .await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let handle = db
        .builder()
        .typed(move |email: Email, _ctx| {
            let s = s.clone();
            async move {
                s.lock().unwrap().push(email.to);
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || {
        counters.completed() == 1 && counters.dead() == 1
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(report.counters.retried, 0);
    assert_eq!(*seen.lock().unwrap(), vec!["a@example.com".to_owned()]);
    assert_eq!(db.job(good).await.state, JobState::Completed);
    let bad = db.job(bad).await;
    assert_eq!((bad.state, bad.attempts), (JobState::Dead, 1));
    let msg = bad.last_error.unwrap();
    assert!(msg.contains("Email"), "{msg}");
    assert!(msg.contains("missing field `to`"), "{msg}");
}

#[tokio::test(start_paused = true)]
async fn handler_errors_map_to_failures() {
    let db = Db::new().await;
    let push = |payload: &'static str| {
        let db = &db;
        async move {
            db.push(NewJob::new(Q, &json!(payload)).unwrap().max_attempts(3))
                .await
        }
    };
    let (retry, later, perm, io) = (
        push("retry").await,
        push("later").await,
        push("perm").await,
        push("io").await,
    );
    let handle = db
        .builder()
        .handler_fn(|ctx| async move {
            match ctx.payload::<String>()?.as_str() {
                "retry" => Err(JobError::retryable("flaky upstream")),
                "later" => Err(JobError::retry_after(
                    "rate limited",
                    Duration::from_secs(3600),
                )),
                "perm" => Err(JobError::permanent("no such account")),
                _ => {
                    std::fs::read("/nonexistent/definitely/not/here")?;
                    Ok(())
                }
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_millis(500), || {
        counters.retried() == 3 && counters.dead() == 1
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(1)).await;
    assert!(report.all_settled());
    let now = db.now().await;
    let job = db.job(retry).await;
    assert_eq!((job.state, job.attempts), (JobState::Pending, 1));
    assert_eq!(job.last_error.as_deref(), Some("flaky upstream"));
    // The queue's retry policy: the first backoff is 1 s, give or take a fifth.
    let backoff = job.run_at - job.errors[0].at;
    assert!(
        backoff >= chrono::Duration::milliseconds(800)
            && backoff <= chrono::Duration::milliseconds(1200),
        "{backoff}"
    );
    let job = db.job(later).await;
    assert_eq!(job.state, JobState::Pending);
    assert!(job.run_at > now + chrono::Duration::minutes(59));
    let job = db.job(perm).await;
    assert_eq!((job.state, job.attempts), (JobState::Dead, 1));
    assert_eq!(job.last_error.as_deref(), Some("no such account"));
    let job = db.job(io).await;
    assert_eq!(job.state, JobState::Pending);
    assert!(job.last_error.unwrap().contains("No such file"));
}

#[tokio::test(start_paused = true)]
async fn the_context_carries_the_job_and_its_lease() {
    let db = Db::new().await;
    let id = db
        .push(NewJob::new(Q, &json!({"k": "v"})).unwrap().max_attempts(2))
        .await;
    let seen = Arc::new(Mutex::new(None));
    let (s, other) = (seen.clone(), db.other.clone());
    let handle = db
        .builder()
        .worker_id("the-worker")
        .handler_fn(move |ctx| {
            let (s, other) = (s.clone(), other.clone());
            async move {
                let stored = other.get(ctx.id()).await.unwrap().unwrap();
                *s.lock().unwrap() = Some((
                    ctx.id(),
                    ctx.attempt(),
                    ctx.is_last_attempt(),
                    ctx.lease(),
                    ctx.job.payload_value(),
                    stored,
                ));
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(1), || counters.completed() == 1).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let (jid, attempt, last, lease, payload, stored) = seen.lock().unwrap().take().unwrap();
    assert_eq!(jid, id);
    assert_eq!(attempt, 1);
    assert!(!last);
    assert_eq!(lease.job_id, id);
    assert_eq!(lease.queue, Q);
    assert_eq!((lease.attempt, lease.max_attempts), (1, 2));
    assert_eq!(payload, json!({"k": "v"}));
    // What the handler is told is what is stored while it runs.
    assert_eq!(stored.state, JobState::Running);
    assert_eq!(stored.lease_expires_at, Some(lease.expires_at));
    assert_eq!(stored.worker.as_deref(), Some("the-worker"));
}

#[tokio::test(start_paused = true)]
async fn a_handler_past_its_timeout_is_stopped_and_retried() {
    let db = Db::new().await;
    let id = db.push_n(1, json!({})).await[0];
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = db
        .builder()
        .job_timeout(Some(Duration::from_secs(2)))
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(3), || counters.retried() == 1).await;
    assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
    handle.shutdown(Duration::from_secs(1)).await;
    let job = db.job(id).await;
    assert_eq!((job.state, job.attempts), (JobState::Pending, 1));
    assert!(job.last_error.unwrap().contains("timed out after 2s"));
}

#[tokio::test(start_paused = true)]
async fn jobs_go_to_the_handler_of_their_kind_and_the_rest_to_the_default() {
    let db = Db::new().await;
    let typed = db
        .push(NewJob::of(&Ping { n: 7 }).unwrap().with_queue(Q))
        .await;
    let plain = db.push_n(1, json!({"plain": true})).await[0];
    let other = db
        .push(NewJob::new(Q, &json!({})).unwrap().kind("other"))
        .await;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (s1, s2) = (seen.clone(), seen.clone());
    let handle = db
        .builder()
        .job(move |p: Ping, ctx: JobContext| {
            let s = s1.clone();
            async move {
                assert_eq!(ctx.kind(), Some("ping"));
                s.lock().unwrap().push(format!("ping {}", p.n));
                Ok(())
            }
        })
        .handler_fn(move |ctx: JobContext| {
            let s = s2.clone();
            async move {
                s.lock().unwrap().push(format!("default {:?}", ctx.kind()));
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.completed() == 3).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen,
        vec!["default None", "default Some(\"other\")", "ping 7"]
    );
    for id in [typed, plain, other] {
        assert_eq!(db.job(id).await.state, JobState::Completed);
    }
}

#[tokio::test(start_paused = true)]
async fn a_kind_without_a_handler_fails_by_the_retry_policy_naming_it() {
    let db = Db::new().await;
    let id = db
        .push(NewJob::new(Q, &json!({})).unwrap().kind("unknown.kind"))
        .await;
    let bare = db.push_n(1, json!({})).await[0];
    let handle = db
        .builder()
        .job(|_: Ping, _ctx| async { Ok(()) })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.retried() == 2).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let job = db.job(id).await;
    assert_eq!((job.state, job.attempts), (JobState::Pending, 1));
    let error = job.last_error.unwrap();
    assert!(
        error.contains("\"unknown.kind\"") && error.contains("ping"),
        "{error}"
    );
    assert!(job.run_at > db.now().await, "retried later, not at once");
    assert!(db.job(bare).await.last_error.unwrap().contains("no kind"));
}

#[tokio::test(start_paused = true)]
async fn timeouts_come_from_the_job_then_its_kind_then_the_worker() {
    let db = Db::new().await;
    let start = db.now().await;
    // The kind's timeout (2 s), applied by the worker (not stored with the job), and its own
    // backoff (100 s).
    let by_kind = db.push(NewJob::of(&Slow).unwrap()).await;
    assert_eq!(db.job(by_kind).await.timeout, None);
    // The job's own timeout (4 s) overrides the kind's, though it is longer.
    let by_job = db
        .push(NewJob::of(&Slow).unwrap().timeout(Duration::from_secs(4)))
        .await;
    // No kind: the worker's timeout (3 s).
    let plain = db.push(NewJob::new("slow", &json!({})).unwrap()).await;
    let dropped = Arc::new(AtomicBool::new(false));
    let started = tokio::time::Instant::now();
    let handle = db
        .builder()
        .queue("slow", 5)
        .job_timeout(Some(Duration::from_secs(3)))
        .job(|_: Slow, _ctx| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        })
        .handler_fn(forever(dropped.clone()))
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.retried() == 3).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let mut errors = HashMap::new();
    for (name, id) in [("by_kind", by_kind), ("by_job", by_job), ("plain", plain)] {
        let job = db.job(id).await;
        errors.insert(name, job.last_error.unwrap());
        // Failed at its timeout after the start, retried after its backoff.
        let after = (job.run_at - start).to_std().unwrap();
        match name {
            "plain" => assert!(after < Duration::from_secs(10), "{name}: {after:?}"),
            _ => assert!(after >= Duration::from_secs(100), "{name}: {after:?}"),
        }
    }
    assert!(
        errors["by_kind"].contains("timed out after 2s"),
        "{errors:?}"
    );
    assert!(
        errors["by_job"].contains("timed out after 4s"),
        "{errors:?}"
    );
    assert!(errors["plain"].contains("timed out after 3s"), "{errors:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn a_snooze_gives_the_attempt_back_until_its_bound() {
    let db = Db::new().await;
    let id = db
        .push(
            NewJob::of(&Ping { n: 0 })
                .unwrap()
                .with_queue(Q)
                .max_attempts(1),
        )
        .await;
    let handle = db
        .builder()
        .max_snoozes(3)
        .job(|_: Ping, _ctx| async { Err(JobError::snooze(Duration::from_millis(100))) })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.dead() == 1).await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(counters.snoozed(), 3);
    let job = db.job(id).await;
    assert_eq!(job.snoozes, 3);
    assert_eq!(
        job.attempts, 1,
        "snoozes spend no attempt; the fourth one is a failure"
    );
    assert_eq!(job.state, JobState::Dead);
    assert!(job.last_error.unwrap().contains("snoozed"));
    assert_eq!(db.faults.calls(Statement::JobSnooze), 4);
}

#[tokio::test(start_paused = true)]
async fn output_and_metadata_reach_the_queue() {
    let db = Db::with_limits(Limits {
        max_output_bytes: 64,
        ..Limits::default()
    })
    .await;
    let id = db
        .push(
            NewJob::of(&Ping { n: 1 })
                .unwrap()
                .with_queue(Q)
                .meta(&json!({"a": 1, "b": {"c": 2}}))
                .unwrap(),
        )
        .await;
    let other = db.other.clone();
    let handle = db
        .builder()
        .job(move |_: Ping, ctx: JobContext| {
            let other = other.clone();
            async move {
                assert_eq!(ctx.job.meta_value(), json!({"a": 1, "b": {"c": 2}}));
                let merged = ctx.merge_meta(json!({"b": {"c": null, "d": 3}})).await?;
                assert_eq!(merged, json!({"a": 1, "b": {"d": 3}}));
                // Stored at once, while the job runs.
                let stored = other.get(ctx.id()).await.unwrap().unwrap();
                assert_eq!(stored.meta_value(), merged);
                let too_big = ctx.record_output(&"x".repeat(100)).unwrap_err();
                assert!(
                    too_big.is_permanent() && too_big.message().contains("output"),
                    "{too_big}"
                );
                ctx.record_output(&json!({"sent": true}))?;
                Ok(())
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    until(Duration::from_secs(10), || counters.completed() == 1).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let job = db.job(id).await;
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(
        job.output::<serde_json::Value>().unwrap(),
        Some(json!({"sent": true}))
    );
    assert_eq!(job.meta_value(), json!({"a": 1, "b": {"d": 3}}));
    // A job with an output is completed by the statement that stores it, not in a batch.
    assert_eq!(db.faults.calls(Statement::JobComplete), 1);
    assert_eq!(db.faults.calls(BATCH_ACKS), 0);
}
