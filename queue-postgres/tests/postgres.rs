//! Tests against a real PostgreSQL server: `QUEUE_TEST_POSTGRES_URL`, or
//! `postgres://postgres@127.0.0.1:5432/test` when unset. Each test works in its own schema and
//! drops it at the end. When no server answers, each test prints why and passes vacuously.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use queue_core::{
    ClaimStrategy, Error, FailOutcome, Failure, JobId, JobState, Limits, ListRequest, NewJob,
    PopRequest, PruneRequest, Queue, RetryPolicy,
};
use queue_postgres::{PostgresQueue, PostgresQueueBuilder};
use serde_json::json;
use sqlx::postgres::PgListener;
use sqlx::Row;

fn url() -> String {
    std::env::var("QUEUE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

fn fresh_schema() -> String {
    format!("t_{}", &uuid::Uuid::new_v4().simple().to_string()[..16])
}

fn builder(schema: &str) -> PostgresQueueBuilder {
    PostgresQueue::builder(url())
        .schema(schema)
        .connect_timeout(Duration::from_secs(3))
}

/// A migrated queue in a fresh schema, or `None` (with a loud line) when no server answers.
async fn setup_with(
    f: impl FnOnce(PostgresQueueBuilder) -> PostgresQueueBuilder,
) -> Option<PostgresQueue> {
    let schema = fresh_schema();
    match f(builder(&schema)).connect().await {
        Ok(q) => {
            q.migrate().await.expect("migrate");
            Some(q)
        }
        Err(Error::Unavailable { source }) => {
            eprintln!(
                "!!! SKIPPING PostgreSQL test: no server at {} ({source}); set QUEUE_TEST_POSTGRES_URL",
                queue_core::validate::redact_url(&url())
            );
            None
        }
        Err(e) => panic!("connect: {e}"),
    }
}

async fn setup() -> Option<PostgresQueue> {
    setup_with(|b| b).await
}

async fn teardown(q: PostgresQueue) {
    let sql = format!("DROP SCHEMA {} CASCADE", q.schema());
    sqlx::query(&sql)
        .execute(q.pool())
        .await
        .expect("drop schema");
}

fn job(queue: &str, n: i64) -> NewJob {
    NewJob::new(queue, &json!({ "n": n })).unwrap()
}

/// The raw row, read with SQL rather than through the queue.
async fn row(q: &PostgresQueue, id: JobId) -> sqlx::postgres::PgRow {
    let sql = format!(
        "SELECT state, attempts, lease_token, lease_expires_at, finished_at, last_error, run_at, version, now() AS db_now FROM {}.jobs WHERE id = $1",
        q.schema()
    );
    sqlx::query(&sql)
        .bind(id.0)
        .fetch_one(q.pool())
        .await
        .unwrap()
}

async fn count_jobs(q: &PostgresQueue) -> i64 {
    let sql = format!("SELECT count(*) FROM {}.jobs", q.schema());
    sqlx::query_scalar(&sql).fetch_one(q.pool()).await.unwrap()
}

fn lease_of(leased: &[queue_core::Leased]) -> queue_core::Lease {
    assert_eq!(leased.len(), 1, "expected one claimed job");
    leased[0].lease.clone()
}

#[tokio::test]
async fn push_pop_ack_round_trip() {
    let Some(q) = setup().await else { return };
    let id = q.push(job("emails", 1).priority(3)).await.unwrap();
    let stored = q.get(id).await.unwrap().unwrap();
    assert_eq!(stored.state, JobState::Pending);
    assert_eq!(stored.payload_value(), json!({ "n": 1 }));
    assert_eq!(stored.priority, 3);

    let leased = q.pop(PopRequest::new("emails").worker("w1")).await.unwrap();
    let lease = lease_of(&leased);
    assert_eq!(lease.job_id, id);
    assert_eq!(lease.attempt, 1);
    assert_eq!(leased[0].job.state, JobState::Running);
    assert_eq!(leased[0].job.worker.as_deref(), Some("w1"));
    let r = row(&q, id).await;
    assert_eq!(r.get::<String, _>("state"), "running");
    assert_eq!(
        r.get::<Option<uuid::Uuid>, _>("lease_token"),
        Some(lease.token)
    );
    assert_eq!(r.get::<i64, _>("version"), 1);

    assert!(q.pop(PopRequest::new("emails")).await.unwrap().is_empty());
    q.ack(&lease).await.unwrap();
    let r = row(&q, id).await;
    assert_eq!(r.get::<String, _>("state"), "completed");
    assert!(r.get::<Option<uuid::Uuid>, _>("lease_token").is_none());
    assert!(r
        .get::<Option<chrono::DateTime<chrono::Utc>>, _>("lease_expires_at")
        .is_none());
    assert!(r
        .get::<Option<chrono::DateTime<chrono::Utc>>, _>("finished_at")
        .is_some());
    // A second ack with the same lease changes nothing.
    assert!(matches!(q.ack(&lease).await, Err(Error::LeaseLost { job }) if job == id));
    teardown(q).await;
}

#[tokio::test]
async fn claims_in_priority_then_run_at_order_with_own_tokens() {
    let Some(q) = setup().await else { return };
    let low = q.push(job("q", 1).priority(0)).await.unwrap();
    let high = q.push(job("q", 2).priority(10)).await.unwrap();
    let low2 = q.push(job("q", 3).priority(0)).await.unwrap();
    let delayed = q
        .push(job("q", 4).priority(100).delay(Duration::from_secs(3600)))
        .await
        .unwrap();
    q.push(job("other", 5).priority(100)).await.unwrap();

    let leased = q.pop(PopRequest::new("q").limit(10)).await.unwrap();
    let ids: Vec<JobId> = leased.iter().map(|l| l.job.id).collect();
    assert_eq!(ids, vec![high, low, low2]);
    let tokens: HashSet<_> = leased.iter().map(|l| l.lease.token).collect();
    assert_eq!(tokens.len(), 3, "every claimed job has its own lease token");
    assert_eq!(row(&q, delayed).await.get::<String, _>("state"), "pending");
    assert_eq!(
        q.ack_batch(&leased.iter().map(|l| l.lease.clone()).collect::<Vec<_>>())
            .await
            .unwrap(),
        3
    );
    teardown(q).await;
}

#[tokio::test]
async fn limit_is_respected() {
    let Some(q) = setup().await else { return };
    q.push_batch((0..10).map(|i| job("q", i)).collect())
        .await
        .unwrap();
    assert_eq!(q.pop(PopRequest::new("q").limit(4)).await.unwrap().len(), 4);
    assert_eq!(
        q.pop(PopRequest::new("q").limit(100)).await.unwrap().len(),
        6
    );
    let stats = q.stats(Some("q")).await.unwrap();
    assert_eq!(stats[0].running, 10);
    teardown(q).await;
}

#[tokio::test]
async fn fail_retries_then_dies_and_retry_redrives() {
    let Some(q) = setup_with(|b| {
        b.retry_policy(RetryPolicy {
            base: Duration::from_secs(60),
            factor: 2.0,
            max: Duration::from_secs(600),
            jitter: 0.0,
        })
    })
    .await
    else {
        return;
    };
    let id = q.push(job("q", 1).max_attempts(2)).await.unwrap();
    let lease = lease_of(&q.pop(PopRequest::new("q")).await.unwrap());
    let out = q.fail(&lease, Failure::retryable("boom")).await.unwrap();
    assert_eq!(
        out,
        FailOutcome::Retrying {
            after: Duration::from_secs(60)
        }
    );
    let r = row(&q, id).await;
    assert_eq!(r.get::<String, _>("state"), "pending");
    assert_eq!(r.get::<i32, _>("attempts"), 1);
    assert_eq!(
        r.get::<Option<String>, _>("last_error").as_deref(),
        Some("boom")
    );
    let wait = r.get::<chrono::DateTime<chrono::Utc>, _>("run_at")
        - r.get::<chrono::DateTime<chrono::Utc>, _>("db_now");
    assert!(wait > chrono::Duration::seconds(50), "{wait}");
    assert!(r.get::<Option<uuid::Uuid>, _>("lease_token").is_none());
    // Not due yet.
    assert!(q.pop(PopRequest::new("q")).await.unwrap().is_empty());
    // The old lease is dead.
    assert!(matches!(
        q.fail(&lease, Failure::retryable("x")).await,
        Err(Error::LeaseLost { .. })
    ));

    // Make it due, claim the last attempt, fail again: dead.
    let sql = format!(
        "UPDATE {}.jobs SET run_at = now() WHERE id = $1",
        q.schema()
    );
    sqlx::query(&sql)
        .bind(id.0)
        .execute(q.pool())
        .await
        .unwrap();
    let lease = lease_of(&q.pop(PopRequest::new("q")).await.unwrap());
    assert_eq!(lease.attempt, 2);
    assert_eq!(
        q.fail(&lease, Failure::retryable("again")).await.unwrap(),
        FailOutcome::Dead
    );
    let r = row(&q, id).await;
    assert_eq!(r.get::<String, _>("state"), "dead");
    assert!(r
        .get::<Option<chrono::DateTime<chrono::Utc>>, _>("finished_at")
        .is_some());

    assert!(matches!(
        q.cancel(id).await,
        Err(Error::InvalidState {
            operation: "cancel",
            state: JobState::Dead,
            ..
        })
    ));
    q.retry(id).await.unwrap();
    let r = row(&q, id).await;
    assert_eq!(r.get::<String, _>("state"), "pending");
    assert_eq!(r.get::<i32, _>("attempts"), 0);
    assert!(r
        .get::<Option<chrono::DateTime<chrono::Utc>>, _>("finished_at")
        .is_none());
    assert!(matches!(
        q.retry(id).await,
        Err(Error::InvalidState {
            operation: "retry",
            state: JobState::Pending,
            ..
        })
    ));
    assert!(matches!(
        q.retry(JobId::new()).await,
        Err(Error::NotFound { .. })
    ));
    teardown(q).await;
}

#[tokio::test]
async fn permanent_failure_is_dead_at_once() {
    let Some(q) = setup().await else { return };
    let id = q.push(job("q", 1)).await.unwrap();
    let lease = lease_of(&q.pop(PopRequest::new("q")).await.unwrap());
    assert_eq!(
        q.fail(&lease, Failure::permanent("x".repeat(10_000)))
            .await
            .unwrap(),
        FailOutcome::Dead
    );
    let r = row(&q, id).await;
    assert_eq!(r.get::<String, _>("state"), "dead");
    assert_eq!(
        r.get::<Option<String>, _>("last_error").unwrap().len(),
        queue_core::validate::MAX_ERROR_CHARS
    );
    teardown(q).await;
}

#[tokio::test]
async fn extend_release_and_rescue_are_fenced() {
    let Some(q) = setup().await else { return };
    let id = q.push(job("q", 1).max_attempts(3)).await.unwrap();
    let lease = lease_of(
        &q.pop(PopRequest::new("q").lease(Duration::from_secs(5)))
            .await
            .unwrap(),
    );
    let extended = q.extend(&lease, Duration::from_secs(600)).await.unwrap();
    assert!(extended.expires_at > lease.expires_at + chrono::Duration::seconds(500));
    assert_eq!(extended.token, lease.token);
    assert!(matches!(
        q.extend(&lease, Duration::ZERO).await,
        Err(Error::InvalidInput { .. })
    ));

    q.release(&lease).await.unwrap();
    let r = row(&q, id).await;
    assert_eq!(r.get::<String, _>("state"), "pending");
    assert_eq!(r.get::<i32, _>("attempts"), 0);
    assert!(matches!(
        q.release(&lease).await,
        Err(Error::LeaseLost { .. })
    ));
    assert!(matches!(
        q.extend(&lease, Duration::from_secs(1)).await,
        Err(Error::LeaseLost { .. })
    ));

    // A lease that runs out is rescued; its holder has lost it.
    let lease = lease_of(
        &q.pop(PopRequest::new("q").lease(Duration::from_millis(10)))
            .await
            .unwrap(),
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(q.rescue_expired().await.unwrap(), 1);
    let r = row(&q, id).await;
    assert_eq!(r.get::<String, _>("state"), "pending");
    assert_eq!(
        r.get::<Option<String>, _>("last_error").as_deref(),
        Some("lease expired")
    );
    assert!(matches!(q.ack(&lease).await, Err(Error::LeaseLost { .. })));
    let again = lease_of(&q.pop(PopRequest::new("q")).await.unwrap());
    assert_eq!(again.attempt, 2);
    assert_ne!(again.token, lease.token);

    // Out of attempts: rescue makes it dead.
    let sql = format!(
        "UPDATE {}.jobs SET attempts = 3, lease_expires_at = now() - interval '1 s' WHERE id = $1",
        q.schema()
    );
    sqlx::query(&sql)
        .bind(id.0)
        .execute(q.pool())
        .await
        .unwrap();
    assert_eq!(q.rescue_expired().await.unwrap(), 1);
    assert_eq!(row(&q, id).await.get::<String, _>("state"), "dead");
    assert_eq!(q.rescue_expired().await.unwrap(), 0);
    teardown(q).await;
}

#[tokio::test]
async fn cancel_reports_to_the_holder() {
    let Some(q) = setup().await else { return };
    let id = q.push(job("q", 1)).await.unwrap();
    let lease = lease_of(&q.pop(PopRequest::new("q")).await.unwrap());
    q.cancel(id).await.unwrap();
    assert!(matches!(q.ack(&lease).await, Err(Error::Cancelled { job }) if job == id));
    assert!(matches!(
        q.extend(&lease, Duration::from_secs(1)).await,
        Err(Error::Cancelled { .. })
    ));
    assert!(matches!(
        q.fail(&lease, Failure::retryable("x")).await,
        Err(Error::Cancelled { .. })
    ));
    assert_eq!(row(&q, id).await.get::<String, _>("state"), "cancelled");
    assert!(matches!(
        q.cancel(id).await,
        Err(Error::InvalidState {
            state: JobState::Cancelled,
            ..
        })
    ));
    assert!(matches!(
        q.cancel(JobId::new()).await,
        Err(Error::NotFound { .. })
    ));
    let pending = q.push(job("q", 2)).await.unwrap();
    q.cancel(pending).await.unwrap();
    assert!(q.pop(PopRequest::new("q")).await.unwrap().is_empty());
    teardown(q).await;
}

#[tokio::test]
async fn dedup_keys_are_unique_among_live_jobs() {
    let Some(q) = setup().await else { return };
    let first = q.push(job("q", 1).dedup_key("k, 1")).await.unwrap();
    let err = q.push(job("q", 2).dedup_key("k, 1")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Duplicate { queue, dedup_key } if queue == "q" && dedup_key == "k, 1"),
        "{err:?}"
    );
    // Another queue may use the same key.
    q.push(job("other", 3).dedup_key("k, 1")).await.unwrap();

    // A batch with a clash stores nothing, and names the clash.
    let before = count_jobs(&q).await;
    let err = q
        .push_batch(vec![
            job("q", 4).dedup_key("fresh"),
            job("q", 5).dedup_key("k, 1"),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Duplicate { queue, dedup_key } if queue == "q" && dedup_key == "k, 1"),
        "{err:?}"
    );
    // A clash inside the batch itself, too.
    let err = q
        .push_batch(vec![
            job("q", 6).dedup_key("twin"),
            job("q", 7).dedup_key("twin"),
        ])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Duplicate { .. }), "{err:?}");
    assert_eq!(count_jobs(&q).await, before);

    // Once the first finishes, the key is free; retrying the finished one then clashes.
    let lease = lease_of(&q.pop(PopRequest::new("q")).await.unwrap());
    assert_eq!(lease.job_id, first);
    q.fail(&lease, Failure::permanent("x")).await.unwrap();
    let second = q.push(job("q", 8).dedup_key("k, 1")).await.unwrap();
    assert!(matches!(q.retry(first).await, Err(Error::Duplicate { .. })));
    q.cancel(second).await.unwrap();
    q.retry(first).await.unwrap();
    teardown(q).await;
}

#[tokio::test]
async fn batches_span_chunks_atomically() {
    let Some(q) = setup_with(|b| {
        b.limits(Limits {
            max_batch: 20_000,
            ..Limits::default()
        })
    })
    .await
    else {
        return;
    };
    let jobs: Vec<NewJob> = (0..12_000).map(|i| job("bulk", i)).collect();
    let ids: Vec<JobId> = jobs.iter().map(NewJob::id).collect();
    assert_eq!(q.push_batch(jobs).await.unwrap(), ids);
    assert_eq!(count_jobs(&q).await, 12_000);

    // A clash in the last chunk rolls back the first ones too.
    let mut jobs: Vec<NewJob> = (0..11_000).map(|i| job("bulk2", i)).collect();
    jobs.push(job("bulk2", 0).with_id(ids[0]));
    assert!(matches!(
        q.push_batch(jobs).await,
        Err(Error::Database { .. })
    ));
    assert_eq!(count_jobs(&q).await, 12_000);
    assert!(matches!(
        q.push_batch((0..20_001).map(|i| job("x", i)).collect())
            .await,
        Err(Error::InvalidInput { .. })
    ));
    assert!(q.push_batch(Vec::new()).await.unwrap().is_empty());
    teardown(q).await;
}

#[tokio::test]
async fn ack_batch_skips_lost_leases() {
    let Some(q) = setup().await else { return };
    q.push_batch((0..5).map(|i| job("q", i)).collect())
        .await
        .unwrap();
    let leased = q.pop(PopRequest::new("q").limit(5)).await.unwrap();
    let mut leases: Vec<_> = leased.iter().map(|l| l.lease.clone()).collect();
    q.release(&leases[0]).await.unwrap();
    leases[1].token = uuid::Uuid::new_v4();
    assert_eq!(q.ack_batch(&leases).await.unwrap(), 3);
    let stats = &q.stats(Some("q")).await.unwrap()[0];
    assert_eq!((stats.completed, stats.running, stats.available), (3, 1, 1));
    assert_eq!(q.ack_batch(&[]).await.unwrap(), 0);
    teardown(q).await;
}

#[tokio::test]
async fn stats_list_and_prune() {
    let Some(q) = setup().await else { return };
    let a = q.push(job("a", 1)).await.unwrap();
    q.push(job("a", 2).delay(Duration::from_secs(3600)))
        .await
        .unwrap();
    let b = q.push(job("b", 3)).await.unwrap();
    let lease = lease_of(&q.pop(PopRequest::new("b")).await.unwrap());
    q.ack(&lease).await.unwrap();

    let stats = q.stats(None).await.unwrap();
    assert_eq!(stats.len(), 2);
    assert_eq!(
        (
            stats[0].queue.as_str(),
            stats[0].available,
            stats[0].scheduled
        ),
        ("a", 1, 1)
    );
    assert_eq!((stats[1].queue.as_str(), stats[1].completed), ("b", 1));
    let empty = q.stats(Some("none")).await.unwrap();
    assert_eq!(empty.len(), 1);
    assert_eq!(empty[0].count(JobState::Pending), 0);

    let all = q.list(ListRequest::default()).await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].id, b, "newest first");
    let pending_a = q
        .list(ListRequest {
            queue: Some("a".into()),
            state: Some(JobState::Pending),
            limit: 1,
        })
        .await
        .unwrap();
    assert_eq!(pending_a.len(), 1);
    assert_ne!(pending_a[0].id, b);

    assert_eq!(
        q.prune(PruneRequest::older_than(Duration::from_secs(3600)))
            .await
            .unwrap(),
        0
    );
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        q.prune(PruneRequest::older_than(Duration::from_millis(1)))
            .await
            .unwrap(),
        1
    );
    assert!(q.get(b).await.unwrap().is_none());
    assert!(q.get(a).await.unwrap().is_some());
    let now = q.now().await.unwrap();
    assert!((now - chrono::Utc::now()).num_seconds().abs() < 60);
    teardown(q).await;
}

#[tokio::test]
async fn migrate_is_idempotent_and_concurrent_safe() {
    let schema = fresh_schema();
    let q = match builder(&schema).connect().await {
        Ok(q) => q,
        Err(e) => {
            eprintln!("!!! SKIPPING PostgreSQL test: {e}");
            return;
        }
    };
    let runs: Vec<_> = (0..6)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.migrate().await })
        })
        .collect();
    for r in runs {
        r.await.unwrap().unwrap();
    }
    q.migrate().await.unwrap();
    let sql = format!("SELECT count(*) FROM {}.migrations", schema);
    let n: i64 = sqlx::query_scalar(&sql).fetch_one(q.pool()).await.unwrap();
    assert_eq!(n, 1);
    q.push(job("q", 1)).await.unwrap();
    teardown(q).await;
}

#[tokio::test]
async fn bad_configuration_and_unreachable_servers() {
    let err = PostgresQueue::builder(url())
        .schema("bad-schema;")
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidInput { ref field, .. } if field == "schema"),
        "{err:?}"
    );
    let err = PostgresQueue::builder("mysql://x@localhost/db")
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidInput { ref field, .. } if field == "url"),
        "{err:?}"
    );
    let err = PostgresQueue::builder(url())
        .claim_strategy(ClaimStrategy::WriteLock)
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "claim_strategy"));

    let t = Instant::now();
    let err = PostgresQueue::builder("postgres://user:hunter2@127.0.0.1:1/db")
        .connect_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert!(t.elapsed() < Duration::from_secs(5));
    let shown = format!("{err} {err:?} {:?}", std::error::Error::source(&err));
    assert!(!shown.contains("hunter2"), "{shown}");
    let shown = format!(
        "{:?}",
        PostgresQueue::builder("postgres://user:hunter2@h/db")
    );
    assert!(!shown.contains("hunter2"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_poppers_get_each_job_exactly_once() {
    for claim in [ClaimStrategy::SkipLocked, ClaimStrategy::Optimistic] {
        let Some(q) = setup_with(|b| b.claim_strategy(claim).max_connections(24)).await else {
            return;
        };
        const JOBS: i64 = 2_000;
        // Half is there before the poppers start, half arrives while they run.
        q.push_batch((0..JOBS / 2).map(|i| job("c", i)).collect())
            .await
            .unwrap();
        let producer = {
            let q = q.clone();
            tokio::spawn(async move {
                for i in JOBS / 2..JOBS {
                    if i % 10 == 0 {
                        q.push_batch((i..i + 10).map(|k| job("c", k)).collect())
                            .await
                            .unwrap();
                    }
                }
            })
        };
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let poppers: Vec<_> = (0..16)
            .map(|w| {
                let q = q.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut idle = 0;
                    while idle < 20 {
                        let got = q
                            .pop(
                                PopRequest::new("c")
                                    .limit(1 + w % 4)
                                    .worker(format!("w{w}")),
                            )
                            .await
                            .unwrap();
                        if got.is_empty() {
                            idle += 1;
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                        idle = 0;
                        let leases: Vec<_> = got.iter().map(|l| l.lease.clone()).collect();
                        seen.lock().unwrap().extend(
                            got.iter()
                                .map(|l| l.job.payload_value()["n"].as_i64().unwrap()),
                        );
                        assert_eq!(q.ack_batch(&leases).await.unwrap(), leases.len() as u64);
                    }
                })
            })
            .collect();
        producer.await.unwrap();
        for p in poppers {
            p.await.unwrap();
        }
        let mut seen = seen.lock().unwrap().clone();
        seen.sort_unstable();
        assert_eq!(
            seen,
            (0..JOBS).collect::<Vec<_>>(),
            "{claim:?}: each job exactly once"
        );
        let sql = format!(
            "SELECT count(*) FROM {}.jobs WHERE state = 'completed' AND attempts = 1",
            q.schema()
        );
        let n: i64 = sqlx::query_scalar(&sql).fetch_one(q.pool()).await.unwrap();
        assert_eq!(n, JOBS);
        teardown(q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_from_another_value_wakes_a_waiter() {
    let Some(q) = setup().await else { return };
    let producer = builder(q.schema()).connect().await.unwrap();
    // The first wait starts the listener; wait until it is up and drain its catch-up wake-up.
    q.wait_for_work("wake", Duration::from_millis(10)).await;
    let t = Instant::now();
    while !q.is_listening() && t.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(q.is_listening());
    q.wait_for_work("wake", Duration::from_millis(100)).await;

    let waiter = {
        let q = q.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            q.wait_for_work("wake", Duration::from_secs(10)).await;
            t.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let pushed = Instant::now();
    producer.push(job("wake", 1)).await.unwrap();
    let waited = waiter.await.unwrap();
    let after_push = pushed.elapsed();
    assert!(
        waited < Duration::from_secs(5),
        "woken by the notification, not the timeout: {waited:?}"
    );
    eprintln!("woken {after_push:?} after the push");
    teardown(q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_reconnects_after_its_backend_is_killed() {
    let Some(q) = setup().await else { return };
    let producer = builder(q.schema()).connect().await.unwrap();
    q.wait_for_work("rc", Duration::from_millis(10)).await;
    let listen_sql = format!("LISTEN \"{}\"", q.channel());
    let find = "SELECT pid FROM pg_stat_activity WHERE query = $1";
    let pid_of_listener = || async {
        let t = Instant::now();
        loop {
            let pid: Option<i32> = sqlx::query_scalar(find)
                .bind(&listen_sql)
                .fetch_optional(producer.pool())
                .await
                .unwrap();
            if let Some(pid) = pid {
                return pid;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "no listener backend");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let old = pid_of_listener().await;
    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(old)
        .fetch_one(producer.pool())
        .await
        .unwrap();
    assert!(killed);
    // The task notices, backs off and listens again on a new backend.
    let t = Instant::now();
    let new = loop {
        let pid = pid_of_listener().await;
        if pid != old {
            break pid;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "listener never came back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_ne!(new, old);
    while !q.is_listening() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Drain the catch-up wake-up, then a push from elsewhere must arrive through the new LISTEN.
    q.wait_for_work("rc", Duration::from_millis(100)).await;
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            q.wait_for_work("rc", Duration::from_secs(10)).await;
            t.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    producer.push(job("rc", 1)).await.unwrap();
    let waited = waiter.await.unwrap();
    assert!(
        waited < Duration::from_secs(5),
        "woken through the new connection: {waited:?}"
    );
    teardown(q).await;
}

/// Collects the notifications that arrive on `channel` within `window`.
async fn notifications(listener: &mut PgListener, window: Duration) -> Vec<String> {
    let mut got = Vec::new();
    let deadline = Instant::now() + window;
    while let Ok(Ok(n)) = tokio::time::timeout_at(deadline.into(), listener.recv()).await {
        got.push(n.payload().to_owned());
    }
    got
}

#[tokio::test]
async fn one_notification_per_queue_per_transaction() {
    let Some(q) = setup().await else { return };
    let mut listener = PgListener::connect(&url()).await.unwrap();
    listener.listen(q.channel()).await.unwrap();

    q.push_batch(
        (0..50)
            .map(|i| job(if i % 2 == 0 { "x" } else { "y" }, i))
            .collect(),
    )
    .await
    .unwrap();
    let mut got = notifications(&mut listener, Duration::from_millis(300)).await;
    got.sort();
    assert_eq!(got, vec!["x".to_string(), "y".to_string()]);

    // Inside a transaction: nothing until commit, nothing at all on rollback.
    let mut tx = q.pool().begin().await.unwrap();
    q.push_in_tx(&mut tx, job("x", 1)).await.unwrap();
    q.push_in_tx(&mut tx, job("x", 2)).await.unwrap();
    assert!(notifications(&mut listener, Duration::from_millis(200))
        .await
        .is_empty());
    tx.commit().await.unwrap();
    assert_eq!(
        notifications(&mut listener, Duration::from_millis(300)).await,
        vec!["x".to_string()]
    );
    let mut tx = q.pool().begin().await.unwrap();
    q.push_in_tx(&mut tx, job("x", 3)).await.unwrap();
    tx.rollback().await.unwrap();
    assert!(notifications(&mut listener, Duration::from_millis(200))
        .await
        .is_empty());

    // Turned off: the rows arrive, the notifications do not.
    let quiet = builder(q.schema()).notify(false).connect().await.unwrap();
    quiet.push(job("x", 4)).await.unwrap();
    quiet.push_batch(vec![job("x", 5)]).await.unwrap();
    assert!(notifications(&mut listener, Duration::from_millis(200))
        .await
        .is_empty());
    assert_eq!(count_jobs(&q).await, 54);
    teardown(q).await;
}

#[tokio::test]
async fn push_in_tx_exists_iff_the_transaction_commits() {
    let Some(q) = setup().await else { return };
    let mut tx = q.pool().begin().await.unwrap();
    let rolled_back = q.push_in_tx(&mut tx, job("t", 1)).await.unwrap();
    let batch = q
        .push_batch_in_tx(&mut tx, vec![job("t", 2), job("t", 3)])
        .await
        .unwrap();
    // Invisible to others before commit.
    assert!(q.get(rolled_back).await.unwrap().is_none());
    assert!(q.pop(PopRequest::new("t")).await.unwrap().is_empty());
    tx.rollback().await.unwrap();
    assert!(q.get(rolled_back).await.unwrap().is_none());
    assert!(q.get(batch[0]).await.unwrap().is_none());
    assert_eq!(count_jobs(&q).await, 0);

    let mut tx = q.pool().begin().await.unwrap();
    let committed = q.push_in_tx(&mut tx, job("t", 4)).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        q.get(committed).await.unwrap().unwrap().state,
        JobState::Pending
    );
    teardown(q).await;
}

#[tokio::test]
async fn complete_in_tx_commits_with_the_handlers_writes() {
    let Some(q) = setup().await else { return };
    let effects = format!("{}.effects", q.schema());
    sqlx::query(&format!("CREATE TABLE {effects} (job uuid PRIMARY KEY)"))
        .execute(q.pool())
        .await
        .unwrap();
    let insert_effect = format!("INSERT INTO {effects} (job) VALUES ($1)");
    let count_effects = format!("SELECT count(*) FROM {effects}");

    // Lease still current: the effect and the completion commit together.
    let id = q.push(job("x", 1)).await.unwrap();
    let lease = lease_of(&q.pop(PopRequest::new("x")).await.unwrap());
    let mut tx = q.pool().begin().await.unwrap();
    sqlx::query(&insert_effect)
        .bind(id.0)
        .execute(&mut *tx)
        .await
        .unwrap();
    q.complete_in_tx(&mut tx, &lease).await.unwrap();
    // Not completed for anyone else until the commit.
    assert_eq!(row(&q, id).await.get::<String, _>("state"), "running");
    tx.commit().await.unwrap();
    assert_eq!(row(&q, id).await.get::<String, _>("state"), "completed");

    // Lease lost (expired and rescued): LeaseLost, and the caller's write rolls back.
    let id = q.push(job("x", 2)).await.unwrap();
    let lease = lease_of(
        &q.pop(PopRequest::new("x").lease(Duration::from_millis(10)))
            .await
            .unwrap(),
    );
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(q.rescue_expired().await.unwrap(), 1);
    let mut tx = q.pool().begin().await.unwrap();
    sqlx::query(&insert_effect)
        .bind(id.0)
        .execute(&mut *tx)
        .await
        .unwrap();
    let err = q.complete_in_tx(&mut tx, &lease).await.unwrap_err();
    assert!(
        matches!(err, Error::LeaseLost { job } if job == id),
        "{err:?}"
    );
    tx.rollback().await.unwrap();
    let n: i64 = sqlx::query_scalar(&count_effects)
        .fetch_one(q.pool())
        .await
        .unwrap();
    assert_eq!(n, 1, "only the first job's effect is stored");
    assert_eq!(row(&q, id).await.get::<String, _>("state"), "pending");

    // Cancelled while held: Cancelled.
    let lease = lease_of(&q.pop(PopRequest::new("x")).await.unwrap());
    q.cancel(lease.job_id).await.unwrap();
    let mut tx = q.pool().begin().await.unwrap();
    assert!(matches!(
        q.complete_in_tx(&mut tx, &lease).await,
        Err(Error::Cancelled { .. })
    ));
    tx.rollback().await.unwrap();
    teardown(q).await;
}

#[tokio::test]
async fn invalid_input_is_rejected_before_the_database() {
    let Some(q) = setup().await else { return };
    assert!(
        matches!(q.push(job("bad queue", 1)).await, Err(Error::InvalidInput { ref field, .. }) if field == "queue")
    );
    assert!(matches!(
        q.push(job("q", 1).max_attempts(0)).await,
        Err(Error::InvalidInput { .. })
    ));
    let err = q
        .push_batch(vec![job("q", 1), job("", 2)])
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidInput { ref field, .. } if field == "jobs[1].queue"),
        "{err:?}"
    );
    assert!(matches!(
        q.pop(PopRequest::new("q").limit(0)).await,
        Err(Error::InvalidInput { .. })
    ));
    assert_eq!(count_jobs(&q).await, 0);
    teardown(q).await;
}

#[tokio::test]
async fn single_push_notifications_are_coalesced_but_never_lost() {
    let Some(q) = setup().await else { return };
    let producer = builder(q.schema())
        .notify_window(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let mut listener = PgListener::connect(&url()).await.unwrap();
    listener.listen(q.channel()).await.unwrap();

    let t = Instant::now();
    for i in 0..20 {
        producer.push(job("burst", i)).await.unwrap();
    }
    let pushed_in = t.elapsed();
    let got = notifications(&mut listener, Duration::from_millis(800)).await;
    if pushed_in < Duration::from_millis(300) {
        // The first push notified at once; the other 19 share one trailing notification.
        assert_eq!(got, vec!["burst".to_string(); 2], "pushed in {pushed_in:?}");
    } else {
        assert!(got.len() >= 2 && got.len() < 20, "{got:?}");
    }
    assert_eq!(count_jobs(&q).await, 20);

    // A quiet queue notifies at once again.
    producer.push(job("burst", 20)).await.unwrap();
    let got = notifications(&mut listener, Duration::from_millis(200)).await;
    assert_eq!(got, vec!["burst".to_string()]);
    teardown(q).await;
}

#[tokio::test]
async fn a_killed_connection_is_unavailable_once_then_replaced() {
    let Some(q) = setup_with(|b| b.max_connections(1)).await else {
        return;
    };
    let id = q.push(job("k", 1)).await.unwrap();
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(q.pool())
        .await
        .unwrap();
    let admin = builder(q.schema()).connect().await.unwrap();
    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(admin.pool())
        .await
        .unwrap();
    assert!(killed);
    tokio::time::sleep(Duration::from_millis(100)).await;
    match q.get(id).await {
        Ok(job) => assert!(job.is_some()),
        Err(e) => {
            eprintln!("first call after the kill: {e}");
            assert!(
                e.is_transient(),
                "a dropped connection is Unavailable: {e:?}"
            )
        }
    }
    let job = q
        .get(id)
        .await
        .expect("the pool replaced the dead connection");
    assert_eq!(job.unwrap().state, JobState::Pending);
    teardown(q).await;
}
