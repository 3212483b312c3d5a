//! The SQL of every `Queue` operation, checked against the stored rows, under both claim
//! strategies where the claim is involved.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{count, now_us, raw};
use queue_core::{
    ClaimStrategy, Error, FailOutcome, Failure, JobId, JobState, Limits, ListRequest, NewJob,
    PopRequest, PruneRequest, Queue, RetryPolicy,
};
use queue_sqlite::SqliteQueue;
use serde_json::json;

fn job(queue: &str, n: i64) -> NewJob {
    NewJob::new(queue, &json!({ "n": n })).unwrap()
}

fn pop(queue: &str, limit: usize) -> PopRequest {
    PopRequest::new(queue).limit(limit).worker("test-worker")
}

/// Runs each listed `async fn(ClaimStrategy)` once per claim strategy.
macro_rules! both_strategies {
    ($($name:ident),* $(,)?) => {
        mod write_lock {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(queue_core::ClaimStrategy::WriteLock).await
                }
            )*
        }
        mod optimistic {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(queue_core::ClaimStrategy::Optimistic).await
                }
            )*
        }
    };
}

both_strategies!(
    push_pop_ack,
    pop_order_and_due_time,
    pop_limit_and_empty_queue,
    pop_is_per_queue,
    concurrent_poppers_get_every_job_exactly_once,
);

async fn push_pop_ack(strategy: ClaimStrategy) {
    let (q, _dir) = common::queue(strategy).await;
    assert_eq!(q.capabilities().claim, strategy);
    let before = now_us();
    let id = q.push(job("emails", 1).max_attempts(3)).await.unwrap();

    let row = raw(&q, id).await.unwrap();
    assert_eq!(row.state, "pending");
    assert_eq!(row.attempts, 0);
    assert!(row.run_at >= before && row.run_at <= now_us());

    let leased = q
        .pop(pop("emails", 5).lease(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    let l = &leased[0];
    assert_eq!(l.job.id, id);
    assert_eq!(l.job.state, JobState::Running);
    assert_eq!(l.job.attempts, 1);
    assert_eq!(l.job.worker.as_deref(), Some("test-worker"));
    assert_eq!(l.job.payload_value(), json!({ "n": 1 }));
    assert_eq!(l.lease.attempt, 1);
    assert_eq!(l.lease.max_attempts, 3);
    assert_eq!(l.lease.queue, "emails");
    assert_eq!(l.lease.token.get_version_num(), 4);
    assert_eq!(l.lease.token.get_variant(), uuid::Variant::RFC4122);
    let until = (l.lease.expires_at - chrono::Utc::now()).num_seconds();
    assert!((58..=60).contains(&until), "{until}");

    let row = raw(&q, id).await.unwrap();
    assert_eq!(row.state, "running");
    assert_eq!(row.attempts, 1);
    assert_eq!(
        row.lease_token.as_deref(),
        Some(&l.lease.token.as_bytes()[..])
    );
    assert_eq!(
        row.lease_expires_at,
        Some(l.lease.expires_at.timestamp_micros())
    );
    assert_eq!(row.version, 1);

    // Nothing else to claim while it runs.
    assert!(q.pop(pop("emails", 5)).await.unwrap().is_empty());

    q.ack(&l.lease).await.unwrap();
    let row = raw(&q, id).await.unwrap();
    assert_eq!(row.state, "completed");
    assert!(row.finished_at.is_some());
    assert_eq!(row.lease_token, None);
    assert_eq!(row.lease_expires_at, None);
    assert_eq!(row.version, 2);

    // The same lease again is lost, and changes nothing.
    let err = q.ack(&l.lease).await.unwrap_err();
    assert!(
        matches!(err, Error::LeaseLost { job } if job == id),
        "{err:?}"
    );
    assert_eq!(raw(&q, id).await.unwrap().version, 2);

    let got = q.get(id).await.unwrap().unwrap();
    assert_eq!(got.state, JobState::Completed);
    assert_eq!(got.attempts, 1);
    assert!(q.get(JobId::new()).await.unwrap().is_none());
}

async fn pop_order_and_due_time(strategy: ClaimStrategy) {
    let (q, _dir) = common::queue(strategy).await;
    let low = q.push(job("q", 1).priority(-5)).await.unwrap();
    let first_normal = q.push(job("q", 2)).await.unwrap();
    let high = q.push(job("q", 3).priority(10)).await.unwrap();
    let second_normal = q.push(job("q", 4)).await.unwrap();
    let delayed = q
        .push(job("q", 5).priority(100).delay(Duration::from_secs(3600)))
        .await
        .unwrap();
    let past = q
        .push(job("q", 6).run_at(chrono::Utc::now() - chrono::Duration::hours(1)))
        .await
        .unwrap();

    let got: Vec<JobId> = q
        .pop(pop("q", 10))
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.job.id)
        .collect();
    // priority DESC, then run_at, then id. A run_at in the past means "now" (the push time),
    // so the back-dated job is due but not ahead of older pushes.
    assert_eq!(got, vec![high, first_normal, second_normal, past, low]);
    assert_eq!(raw(&q, delayed).await.unwrap().state, "pending");
}

async fn pop_limit_and_empty_queue(strategy: ClaimStrategy) {
    let (q, _dir) = common::queue(strategy).await;
    assert!(q.pop(pop("q", 3)).await.unwrap().is_empty());
    let ids = q
        .push_batch((0..5).map(|n| job("q", n)).collect())
        .await
        .unwrap();
    let a = q.pop(pop("q", 3)).await.unwrap();
    let b = q.pop(pop("q", 3)).await.unwrap();
    assert_eq!(a.len(), 3);
    assert_eq!(b.len(), 2);
    let got: Vec<JobId> = a.iter().chain(&b).map(|l| l.job.id).collect();
    assert_eq!(got, ids);
    assert!(q.pop(pop("q", 3)).await.unwrap().is_empty());

    let err = q.pop(pop("q", 0)).await.unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "limit"));
}

async fn pop_is_per_queue(strategy: ClaimStrategy) {
    let (q, _dir) = common::queue(strategy).await;
    let a = q.push(job("a", 1)).await.unwrap();
    let b = q.push(job("b", 1)).await.unwrap();
    let got = q.pop(pop("b", 10)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].job.id, b);
    assert_eq!(raw(&q, a).await.unwrap().state, "pending");
}

/// 16 poppers drain 2,000 jobs while a producer is still pushing them: every job is claimed
/// exactly once and ends completed. Half the poppers use a second queue value on the same file,
/// with its own writer connection, as another process would.
async fn concurrent_poppers_get_every_job_exactly_once(strategy: ClaimStrategy) {
    const JOBS: i64 = 2_000;
    let (q, dir) = common::queue(strategy).await;
    let other = common::open(&dir, strategy).await;
    let producer = {
        let q = q.clone();
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for chunk in 0..JOBS / 50 {
                // Mix single pushes and batches.
                if chunk % 2 == 0 {
                    for n in 0..50 {
                        ids.push(q.push(job("work", chunk * 50 + n)).await.unwrap());
                    }
                } else {
                    let batch = (0..50).map(|n| job("work", chunk * 50 + n)).collect();
                    ids.extend(q.push_batch(batch).await.unwrap());
                }
            }
            ids
        })
    };
    let claimed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut poppers = Vec::new();
    for w in 0..16 {
        let q = if w % 2 == 0 { q.clone() } else { other.clone() };
        let claimed = claimed.clone();
        poppers.push(tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let got = q.pop(pop("work", 7).worker(format!("w{w}"))).await.unwrap();
                if got.is_empty() {
                    if claimed.lock().unwrap().len() as i64 >= JOBS || Instant::now() > deadline {
                        return;
                    }
                    q.wait_for_work("work", Duration::from_millis(20)).await;
                    continue;
                }
                let leases: Vec<_> = got.iter().map(|l| l.lease.clone()).collect();
                assert_eq!(q.ack_batch(&leases).await.unwrap(), leases.len() as u64);
                claimed.lock().unwrap().extend(got.iter().map(|l| l.job.id));
            }
        }));
    }
    let pushed = producer.await.unwrap();
    for p in poppers {
        p.await.unwrap();
    }
    let claimed = claimed.lock().unwrap().clone();
    assert_eq!(claimed.len() as i64, JOBS, "every job claimed exactly once");
    let unique: HashSet<JobId> = claimed.iter().copied().collect();
    assert_eq!(unique.len() as i64, JOBS, "no job claimed twice");
    assert_eq!(unique, pushed.into_iter().collect::<HashSet<_>>());
    let stats = q.stats(Some("work")).await.unwrap();
    assert_eq!(stats[0].completed as i64, JOBS);
    assert_eq!(stats[0].count(JobState::Pending), 0);
    assert_eq!(stats[0].running, 0);
}

#[tokio::test]
async fn fail_retries_then_goes_dead() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    let id = q.push(job("q", 1).max_attempts(2)).await.unwrap();
    let l = q.pop(pop("q", 1)).await.unwrap().remove(0);
    let before = now_us();
    let out = q
        .fail(
            &l.lease,
            Failure::retry_after("boom", Duration::from_secs(30)),
        )
        .await
        .unwrap();
    assert_eq!(
        out,
        FailOutcome::Retrying {
            after: Duration::from_secs(30)
        }
    );
    let row = raw(&q, id).await.unwrap();
    assert_eq!(row.state, "pending");
    assert_eq!(row.attempts, 1);
    assert_eq!(row.last_error.as_deref(), Some("boom"));
    assert_eq!(row.lease_token, None);
    assert_eq!(row.lease_expires_at, None);
    assert!(row.run_at >= before + 30_000_000 && row.run_at <= now_us() + 30_000_000);
    // Not due yet.
    assert!(q.pop(pop("q", 1)).await.unwrap().is_empty());
    // The old lease is fenced off.
    let err = q
        .fail(&l.lease, Failure::retryable("again"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }), "{err:?}");

    // Make it due, claim the second (last) attempt and fail it: dead.
    sqlx::query("UPDATE queue_jobs SET run_at = 0 WHERE id = ?")
        .bind(id.0)
        .execute(q.writer_pool())
        .await
        .unwrap();
    let l = q.pop(pop("q", 1)).await.unwrap().remove(0);
    assert_eq!(l.lease.attempt, 2);
    let long = "x".repeat(10_000);
    assert_eq!(
        q.fail(&l.lease, Failure::retryable(long)).await.unwrap(),
        FailOutcome::Dead
    );
    let row = raw(&q, id).await.unwrap();
    assert_eq!(row.state, "dead");
    assert!(row.finished_at.is_some());
    assert_eq!(
        row.last_error.unwrap().chars().count(),
        queue_core::validate::MAX_ERROR_CHARS
    );
}

#[tokio::test]
async fn permanent_failure_and_retry_policy() {
    let dir = tempfile::tempdir().unwrap();
    let q = SqliteQueue::builder(dir.path().join("q.db").display().to_string())
        .retry_policy(RetryPolicy {
            base: Duration::from_secs(7),
            factor: 1.0,
            max: Duration::from_secs(7),
            jitter: 0.0,
        })
        .connect()
        .await
        .unwrap();
    q.migrate().await.unwrap();
    let a = q.push(job("q", 1)).await.unwrap();
    let b = q.push(job("q", 2)).await.unwrap();
    let mut got = q.pop(pop("q", 2)).await.unwrap();
    let lb = got.pop().unwrap();
    let la = got.pop().unwrap();
    assert_eq!(
        q.fail(&la.lease, Failure::retryable("x")).await.unwrap(),
        FailOutcome::Retrying {
            after: Duration::from_secs(7)
        }
    );
    assert_eq!(
        q.fail(&lb.lease, Failure::permanent("bad input"))
            .await
            .unwrap(),
        FailOutcome::Dead
    );
    assert_eq!(raw(&q, a).await.unwrap().state, "pending");
    assert_eq!(raw(&q, b).await.unwrap().state, "dead");
}

#[tokio::test]
async fn extend_and_release() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    let id = q.push(job("q", 1)).await.unwrap();
    let l = q
        .pop(pop("q", 1).lease(Duration::from_secs(5)))
        .await
        .unwrap()
        .remove(0);
    let extended = q.extend(&l.lease, Duration::from_secs(600)).await.unwrap();
    assert_eq!(extended.token, l.lease.token);
    assert!(extended.expires_at > l.lease.expires_at + chrono::Duration::seconds(500));
    let row = raw(&q, id).await.unwrap();
    assert_eq!(
        row.lease_expires_at,
        Some(extended.expires_at.timestamp_micros())
    );
    let err = q
        .extend(&l.lease, Duration::from_secs(100_000))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "by"));

    q.release(&extended).await.unwrap();
    let row = raw(&q, id).await.unwrap();
    assert_eq!(row.state, "pending");
    assert_eq!(row.attempts, 0, "a released attempt is not counted");
    assert_eq!(row.lease_token, None);
    assert!(row.run_at <= now_us());
    let err = q.release(&extended).await.unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }));
    let err = q
        .extend(&extended, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }));

    // Claimable again at once, as attempt 1.
    let l = q.pop(pop("q", 1)).await.unwrap().remove(0);
    assert_eq!(l.lease.attempt, 1);
}

#[tokio::test]
async fn rescue_expired_leases() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    let again = q.push(job("q", 1).max_attempts(2)).await.unwrap();
    let last = q.push(job("q", 2).max_attempts(1)).await.unwrap();
    let live = q.push(job("q", 3)).await.unwrap();
    let short = q
        .pop(pop("q", 2).lease(Duration::from_millis(10)))
        .await
        .unwrap();
    assert_eq!(short.len(), 2);
    let long = q
        .pop(pop("q", 1).lease(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(long[0].job.id, live);
    tokio::time::sleep(Duration::from_millis(30)).await;

    assert_eq!(q.rescue_expired().await.unwrap(), 2);
    let row = raw(&q, again).await.unwrap();
    assert_eq!(row.state, "pending");
    assert_eq!(row.last_error.as_deref(), Some("lease expired"));
    assert_eq!(row.lease_token, None);
    assert_eq!(row.attempts, 1);
    let row = raw(&q, last).await.unwrap();
    assert_eq!(row.state, "dead");
    assert!(row.finished_at.is_some());
    assert_eq!(raw(&q, live).await.unwrap().state, "running");
    assert_eq!(q.rescue_expired().await.unwrap(), 0);

    // The rescued job's old holder is fenced off.
    let old = short.iter().find(|l| l.job.id == again).unwrap();
    assert!(matches!(
        q.ack(&old.lease).await.unwrap_err(),
        Error::LeaseLost { .. }
    ));
    let l = q.pop(pop("q", 1)).await.unwrap().remove(0);
    assert_eq!((l.job.id, l.lease.attempt), (again, 2));
}

#[tokio::test]
async fn cancel_pending_and_running() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    let pending = q.push(job("q", 1).priority(-1)).await.unwrap();
    let running = q.push(job("q", 2)).await.unwrap();
    let l = q.pop(pop("q", 1)).await.unwrap().remove(0);
    assert_eq!(l.job.id, running);

    q.cancel(pending).await.unwrap();
    q.cancel(running).await.unwrap();
    for id in [pending, running] {
        let row = raw(&q, id).await.unwrap();
        assert_eq!(row.state, "cancelled");
        assert!(row.finished_at.is_some());
    }
    // The holder learns of it, and changes nothing.
    assert!(matches!(
        q.ack(&l.lease).await.unwrap_err(),
        Error::Cancelled { job } if job == running
    ));
    assert!(matches!(
        q.fail(&l.lease, Failure::retryable("x")).await.unwrap_err(),
        Error::Cancelled { .. }
    ));
    assert!(matches!(
        q.extend(&l.lease, Duration::from_secs(1))
            .await
            .unwrap_err(),
        Error::Cancelled { .. }
    ));
    assert!(matches!(
        q.release(&l.lease).await.unwrap_err(),
        Error::Cancelled { .. }
    ));
    assert_eq!(raw(&q, running).await.unwrap().state, "cancelled");
    assert!(q.pop(pop("q", 5)).await.unwrap().is_empty());

    let err = q.cancel(pending).await.unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidState {
            state: JobState::Cancelled,
            operation: "cancel",
            ..
        }
    ));
    let missing = JobId::new();
    assert!(matches!(
        q.cancel(missing).await.unwrap_err(),
        Error::NotFound { job } if job == missing
    ));
}

#[tokio::test]
async fn retry_dead_and_cancelled() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    let id = q.push(job("q", 1).max_attempts(1)).await.unwrap();
    let l = q.pop(pop("q", 1)).await.unwrap().remove(0);
    q.fail(&l.lease, Failure::retryable("x")).await.unwrap();
    assert_eq!(raw(&q, id).await.unwrap().state, "dead");

    q.retry(id).await.unwrap();
    let row = raw(&q, id).await.unwrap();
    assert_eq!(row.state, "pending");
    assert_eq!(row.attempts, 0);
    assert_eq!(row.finished_at, None);
    assert!(row.run_at <= now_us());

    let err = q.retry(id).await.unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidState {
            state: JobState::Pending,
            operation: "retry",
            ..
        }
    ));
    assert!(matches!(
        q.retry(JobId::new()).await.unwrap_err(),
        Error::NotFound { .. }
    ));

    q.cancel(id).await.unwrap();
    q.retry(id).await.unwrap();
    assert_eq!(q.pop(pop("q", 1)).await.unwrap()[0].job.id, id);
}

#[tokio::test]
async fn dedup_keys() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    let first = q.push(job("q", 1).dedup_key("k")).await.unwrap();
    let err = q.push(job("q", 2).dedup_key("k")).await.unwrap_err();
    assert!(
        matches!(err, Error::Duplicate { ref queue, ref dedup_key } if queue == "q" && dedup_key == "k"),
        "{err:?}"
    );
    // Same key in another queue, or no key: fine.
    q.push(job("other", 1).dedup_key("k")).await.unwrap();
    q.push(job("q", 3)).await.unwrap();
    assert_eq!(count(&q).await, 3);

    // Still held while running.
    let l = q.pop(pop("q", 1)).await.unwrap().remove(0);
    assert_eq!(l.job.id, first);
    assert!(matches!(
        q.push(job("q", 4).dedup_key("k")).await.unwrap_err(),
        Error::Duplicate { .. }
    ));
    // Free once finished.
    q.ack(&l.lease).await.unwrap();
    let second = q.push(job("q", 5).dedup_key("k")).await.unwrap();

    // A job id clash is not a dedup clash.
    let err = q.push(job("q", 6).with_id(second)).await.unwrap_err();
    assert!(matches!(err, Error::Database { .. }), "{err:?}");

    // Retrying the finished first job while the second is live clashes too.
    q.cancel(second).await.unwrap();
    let third = q.push(job("q", 7).dedup_key("k")).await.unwrap();
    let err = q.retry(second).await.unwrap_err();
    assert!(
        matches!(err, Error::Duplicate { ref dedup_key, .. } if dedup_key == "k"),
        "{err:?}"
    );
    assert_eq!(raw(&q, second).await.unwrap().state, "cancelled");
    assert_eq!(raw(&q, third).await.unwrap().state, "pending");
}

#[tokio::test]
async fn push_batch_is_all_or_nothing() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    q.push(job("q", 0).dedup_key("taken")).await.unwrap();

    // A clash with a stored job, at the end of a batch.
    let mut batch: Vec<NewJob> = (1..=100).map(|n| job("q", n)).collect();
    batch.push(job("q", 101).dedup_key("taken"));
    let err = q.push_batch(batch).await.unwrap_err();
    assert!(
        matches!(err, Error::Duplicate { ref dedup_key, .. } if dedup_key == "taken"),
        "{err:?}"
    );
    assert_eq!(count(&q).await, 1);

    // A clash inside the batch.
    let batch = vec![
        job("q", 1).dedup_key("a"),
        job("q", 2),
        job("q", 3).dedup_key("a"),
    ];
    assert!(matches!(
        q.push_batch(batch).await.unwrap_err(),
        Error::Duplicate { .. }
    ));
    assert_eq!(count(&q).await, 1);

    // An invalid job names its index.
    let batch = vec![job("q", 1), job("q", 2).max_attempts(0)];
    let err = q.push_batch(batch).await.unwrap_err();
    assert!(
        matches!(err, Error::InvalidInput { ref field, .. } if field == "jobs[1].max_attempts"),
        "{err:?}"
    );
    assert_eq!(count(&q).await, 1);

    // A clash in a later chunk of a batch bigger than one statement's parameter limit.
    let mut batch: Vec<NewJob> = (0..9_999).map(|n| job("big", n)).collect();
    batch.push(job("q", 0).dedup_key("taken"));
    assert!(matches!(
        q.push_batch(batch).await.unwrap_err(),
        Error::Duplicate { .. }
    ));
    assert_eq!(count(&q).await, 1);

    // The same batch without the clash stores every job, in order.
    let batch: Vec<NewJob> = (0..10_000).map(|n| job("big", n)).collect();
    let expected: Vec<JobId> = batch.iter().map(|j| j.id()).collect();
    assert_eq!(q.push_batch(batch).await.unwrap(), expected);
    assert_eq!(count(&q).await, 10_001);

    // Over the configured limit: rejected before anything is stored.
    let batch: Vec<NewJob> = (0..10_001).map(|n| job("big", n)).collect();
    assert!(matches!(
        q.push_batch(batch).await.unwrap_err(),
        Error::InvalidInput { ref field, .. } if field == "jobs"
    ));
    assert!(q.push_batch(Vec::new()).await.unwrap().is_empty());
}

#[tokio::test]
async fn ack_batch_matches_id_and_token_pairs() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    q.push_batch((0..4).map(|n| job("q", n)).collect())
        .await
        .unwrap();
    let got = q.pop(pop("q", 4)).await.unwrap();
    let mut leases: Vec<_> = got.iter().map(|l| l.lease.clone()).collect();
    // Swap two tokens: each token is real, but not for that id.
    let t = leases[0].token;
    leases[0].token = leases[1].token;
    leases[1].token = t;
    assert_eq!(q.ack_batch(&leases).await.unwrap(), 2);
    assert_eq!(raw(&q, got[0].job.id).await.unwrap().state, "running");
    assert_eq!(raw(&q, got[1].job.id).await.unwrap().state, "running");
    assert_eq!(raw(&q, got[2].job.id).await.unwrap().state, "completed");
    assert_eq!(raw(&q, got[3].job.id).await.unwrap().state, "completed");
    // Already acked: skipped. A lease listed twice counts once.
    let mut real: Vec<_> = got.iter().map(|l| l.lease.clone()).collect();
    real.push(real[0].clone());
    assert_eq!(q.ack_batch(&real).await.unwrap(), 2);
    assert_eq!(raw(&q, got[0].job.id).await.unwrap().state, "completed");
    assert_eq!(q.ack_batch(&[]).await.unwrap(), 0);

    // More leases than one statement may bind.
    q.push_batch((0..10_000).map(|n| job("big", n)).collect())
        .await
        .unwrap();
    let mut leases = Vec::new();
    for _ in 0..10 {
        leases.extend(
            q.pop(pop("big", 1000))
                .await
                .unwrap()
                .into_iter()
                .map(|l| l.lease),
        );
    }
    let more: Vec<_> = leases.iter().chain(&leases[..7_000]).cloned().collect();
    let err = q.ack_batch(&more).await.unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "leases"));
    assert_eq!(q.ack_batch(&leases).await.unwrap(), 10_000);
    assert_eq!(q.stats(Some("big")).await.unwrap()[0].completed, 10_000);
}

#[tokio::test]
async fn stats_list_and_prune() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    let done = q.push(job("a", 1)).await.unwrap();
    let l = q.pop(pop("a", 1)).await.unwrap().remove(0);
    q.ack(&l.lease).await.unwrap();
    q.push(job("a", 2)).await.unwrap();
    q.push(job("a", 3).delay(Duration::from_secs(600)))
        .await
        .unwrap();
    let available = q.push(job("a", 4)).await.unwrap();
    q.pop(pop("a", 1)).await.unwrap();
    let cancelled = q.push(job("b", 1)).await.unwrap();
    q.cancel(cancelled).await.unwrap();

    let stats = q.stats(None).await.unwrap();
    assert_eq!(stats.len(), 2);
    let a = &stats[0];
    assert_eq!(a.queue, "a");
    assert_eq!(
        (
            a.available,
            a.scheduled,
            a.running,
            a.completed,
            a.dead,
            a.cancelled
        ),
        (1, 1, 1, 1, 0, 0)
    );
    // The pop took the oldest due job, leaving the newer one available.
    assert_eq!(raw(&q, available).await.unwrap().state, "pending");
    assert_eq!(stats[1].queue, "b");
    assert_eq!(stats[1].cancelled, 1);
    let only = q.stats(Some("none")).await.unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].count(JobState::Pending), 0);

    let all = q.list(ListRequest::default()).await.unwrap();
    assert_eq!(all.len(), 5);
    assert!(all.windows(2).all(|w| w[0].created_at >= w[1].created_at));
    assert_eq!(all.last().unwrap().id, done);
    let pending = q
        .list(ListRequest {
            queue: Some("a".into()),
            state: Some(JobState::Pending),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(pending.len(), 2);
    assert!(pending.iter().all(|j| j.state == JobState::Pending));

    // Prune: nothing finished an hour ago; then only completed, then the rest.
    assert_eq!(
        q.prune(PruneRequest::older_than(Duration::from_secs(3600)))
            .await
            .unwrap(),
        0
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    let completed_only = PruneRequest {
        older_than: Duration::ZERO,
        states: vec![JobState::Completed],
        queue: None,
    };
    assert_eq!(q.prune(completed_only).await.unwrap(), 1);
    assert!(q.get(done).await.unwrap().is_none());
    let wrong_queue = PruneRequest {
        queue: Some("a".into()),
        ..PruneRequest::older_than(Duration::ZERO)
    };
    assert_eq!(q.prune(wrong_queue).await.unwrap(), 0);
    assert_eq!(
        q.prune(PruneRequest::older_than(Duration::ZERO))
            .await
            .unwrap(),
        1
    );
    assert_eq!(count(&q).await, 3);
    let bad = PruneRequest {
        states: vec![JobState::Pending],
        ..PruneRequest::older_than(Duration::ZERO)
    };
    assert!(matches!(
        q.prune(bad).await.unwrap_err(),
        Error::InvalidInput { .. }
    ));
}

#[tokio::test]
async fn push_wakes_a_waiting_worker() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            q.wait_for_work("q", Duration::from_secs(10)).await;
            t.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    q.push(job("q", 1)).await.unwrap();
    assert!(waiter.await.unwrap() < Duration::from_secs(2));
}

#[tokio::test]
async fn limits_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let q = SqliteQueue::builder(dir.path().join("q.db").display().to_string())
        .limits(Limits {
            max_payload_bytes: 16,
            max_batch: 2,
            max_pop: 3,
        })
        .connect()
        .await
        .unwrap();
    q.migrate().await.unwrap();
    let err = q
        .push(NewJob::new("q", &"a long payload string").unwrap())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "payload"));
    let err = q
        .push_batch(vec![job("q", 1), job("q", 2), job("q", 3)])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "jobs"));
    let err = q.pop(pop("q", 4)).await.unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "limit"));
    assert_eq!(count(&q).await, 0);
}
