//! Tests against a real MySQL or MariaDB server: `QUEUE_TEST_MYSQL_URL`, default
//! `mysql://root@127.0.0.1:3306/test`. Each test uses its own table prefix and drops its tables
//! at the end. When no server answers the tests are skipped with a loud line, unless
//! `QUEUE_TEST_REQUIRE` names `mysql`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use queue_core::{
    ClaimStrategy, Dialect, Error, Failure, JobState, ListRequest, NewJob, PopRequest,
    PruneRequest, Queue, RetryPolicy,
};
use queue_mysql::MySqlQueue;
use sqlx::Row;

fn url() -> String {
    std::env::var("QUEUE_TEST_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned())
}

fn unique_prefix() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "t{}_{}_{}_",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        fastrand::u32(..)
    )
}

/// A migrated queue with its own tables, or `None` (after a loud line) when no server answers.
async fn queue(strategy: ClaimStrategy) -> Option<MySqlQueue> {
    queue_with(strategy, |b| b).await
}

async fn queue_with(
    strategy: ClaimStrategy,
    f: impl FnOnce(queue_mysql::MySqlQueueBuilder) -> queue_mysql::MySqlQueueBuilder,
) -> Option<MySqlQueue> {
    let builder = MySqlQueue::builder(url())
        .table_prefix(unique_prefix())
        .claim_strategy(strategy)
        .max_connections(40)
        .connect_timeout(Duration::from_secs(3));
    match f(builder).connect().await {
        Ok(q) => {
            q.migrate().await.expect("migrate");
            Some(q)
        }
        Err(Error::Unavailable { source }) => {
            let required = std::env::var("QUEUE_TEST_REQUIRE").unwrap_or_default();
            if required.split(',').any(|s| s.trim() == "mysql") {
                panic!("MySQL/MariaDB required but unavailable: {source}");
            }
            eprintln!(
                "SKIPPED: no MySQL/MariaDB at {} ({source}); set QUEUE_TEST_MYSQL_URL",
                queue_core::validate::redact_url(&url())
            );
            None
        }
        Err(e) => panic!("connect: {e}"),
    }
}

const BOTH: [ClaimStrategy; 2] = [ClaimStrategy::SkipLocked, ClaimStrategy::Optimistic];

fn job(queue: &str, n: u64) -> NewJob {
    NewJob::new(queue, &serde_json::json!({ "n": n })).unwrap()
}

async fn count(q: &MySqlQueue, where_: &str) -> i64 {
    // The table name comes from the validated prefix; the condition is a test literal.
    let sql = format!("SELECT COUNT(*) FROM {} WHERE {where_}", q.jobs_table());
    sqlx::query_scalar(&sql).fetch_one(q.pool()).await.unwrap()
}

#[tokio::test]
async fn capabilities_and_detection() {
    let Some(q) = queue(ClaimStrategy::SkipLocked).await else {
        return;
    };
    let caps = q.capabilities();
    let version = caps.server_version.clone().unwrap();
    let expect = if version.contains("MariaDB") {
        Dialect::MariaDb
    } else {
        Dialect::MySql
    };
    assert_eq!(caps.dialect, expect);
    assert_eq!(caps.claim, ClaimStrategy::SkipLocked);
    assert!(caps.transactions);
    // The session clock is UTC.
    let tz: String = sqlx::query_scalar("SELECT @@session.time_zone")
        .fetch_one(q.pool())
        .await
        .unwrap();
    assert_eq!(tz, "+00:00");
    // MySQL 8 and MariaDB 11.1+ name it transaction_isolation, older MariaDB tx_isolation.
    let iso: String = match sqlx::query_scalar("SELECT @@session.transaction_isolation")
        .fetch_one(q.pool())
        .await
    {
        Ok(v) => v,
        Err(_) => sqlx::query_scalar("SELECT @@session.tx_isolation")
            .fetch_one(q.pool())
            .await
            .unwrap(),
    };
    assert_eq!(iso, "READ-COMMITTED");
    let db_now = q.now().await.unwrap();
    assert!((db_now - chrono::Utc::now()).num_seconds().abs() < 5);
    q.drop_tables().await.unwrap();
}

#[tokio::test]
async fn builder_rejects_bad_settings() {
    let err = MySqlQueue::builder(url())
        .table_prefix("bad-prefix;")
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "table_prefix"));
    let err = MySqlQueue::builder(url())
        .table_prefix("p".repeat(55))
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "table_prefix"));
    let err = MySqlQueue::builder(url())
        .claim_strategy(ClaimStrategy::WriteLock)
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "claim_strategy"));
    let err = MySqlQueue::builder("postgres://u:secret@h/db")
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "url"));
    assert!(!err.to_string().contains("secret"), "{err}");
}

#[tokio::test]
async fn payload_limit_must_fit_the_servers_packet() {
    let result = MySqlQueue::builder(url())
        .limits(queue_core::Limits {
            max_payload_bytes: 2 * 1024 * 1024 * 1024,
            ..Default::default()
        })
        .connect_timeout(Duration::from_secs(3))
        .connect()
        .await;
    match result {
        Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "limits.max_payload_bytes"),
        Err(Error::Unavailable { .. }) => eprintln!("SKIPPED: no MySQL/MariaDB"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn pop_limit_must_fit_the_placeholder_limit() {
    let err = MySqlQueue::builder(url())
        .limits(queue_core::Limits {
            max_pop: 50_000,
            ..Default::default()
        })
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "limits.max_pop"));
}

#[tokio::test]
async fn unreachable_server_is_unavailable_quickly_and_redacted() {
    let started = std::time::Instant::now();
    let err = MySqlQueue::builder("mariadb://user:hunter2@127.0.0.1:1/db")
        .connect_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!format!("{err} {err:?}").contains("hunter2"));
}

#[tokio::test]
async fn migrate_is_idempotent_and_concurrent_safe() {
    let Some(q) = queue(ClaimStrategy::SkipLocked).await else {
        return;
    };
    // Eight concurrent runs on top of the one already done.
    let runs: Vec<_> = (0..8)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.migrate().await })
        })
        .collect();
    for r in runs {
        r.await.unwrap().unwrap();
    }
    let sql = format!("SELECT COUNT(*) FROM {}migrations", q.table_prefix());
    let n: i64 = sqlx::query_scalar(&sql).fetch_one(q.pool()).await.unwrap();
    assert_eq!(n, 1);
    // A fresh prefix migrated by many at once.
    let fresh = MySqlQueue::builder(url())
        .table_prefix(unique_prefix())
        .connect()
        .await
        .unwrap();
    let runs: Vec<_> = (0..6)
        .map(|_| {
            let q = fresh.clone();
            tokio::spawn(async move { q.migrate().await })
        })
        .collect();
    for r in runs {
        r.await.unwrap().unwrap();
    }
    fresh.push(job("m", 1)).await.unwrap();
    // A crash between the DDL (which commits implicitly) and its record: the next run redoes
    // the DDL harmlessly and records it; the jobs survive.
    sqlx::query(&format!("DELETE FROM {}migrations", fresh.table_prefix()))
        .execute(fresh.pool())
        .await
        .unwrap();
    fresh.migrate().await.unwrap();
    let n: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM {}migrations",
        fresh.table_prefix()
    ))
    .fetch_one(fresh.pool())
    .await
    .unwrap();
    assert_eq!(n, 1);
    assert_eq!(count(&fresh, "queue = 'm'").await, 1);
    fresh.drop_tables().await.unwrap();
    q.drop_tables().await.unwrap();
}

#[tokio::test]
async fn lifecycle_in_both_strategies() {
    for strategy in BOTH {
        let Some(q) = queue(strategy).await else {
            return;
        };
        assert_eq!(q.capabilities().claim, strategy);
        // Empty queue: empty at once.
        assert!(q.pop(PopRequest::new("life")).await.unwrap().is_empty());

        let low = q.push(job("life", 1).priority(1)).await.unwrap();
        let high = q.push(job("life", 2).priority(5)).await.unwrap();
        let later = q
            .push(job("life", 3).priority(9).delay(Duration::from_secs(3600)))
            .await
            .unwrap();
        let stored = q.get(later).await.unwrap().unwrap();
        assert!(stored.run_at > q.now().await.unwrap() + chrono::Duration::minutes(59));

        let got = q
            .pop(PopRequest::new("life").limit(10).worker("w1"))
            .await
            .unwrap();
        let ids: Vec<_> = got.iter().map(|l| l.job.id).collect();
        assert_eq!(
            ids,
            vec![high, low],
            "{strategy:?}: priority order, delayed not due"
        );
        let first = &got[0];
        assert_eq!(first.lease.attempt, 1);
        assert_eq!(first.job.state, JobState::Running);
        assert_eq!(first.job.worker.as_deref(), Some("w1"));
        assert_ne!(got[0].lease.token, got[1].lease.token, "one token per job");
        // What pop returned is what is stored.
        let row = q.get(high).await.unwrap().unwrap();
        assert_eq!(row.state, JobState::Running);
        assert_eq!(row.attempts, 1);
        assert_eq!(row.lease_expires_at, Some(first.lease.expires_at));
        assert_eq!(row.updated_at, first.job.updated_at);
        assert_eq!(row.payload.get(), first.job.payload.get());
        let token: uuid::Uuid = sqlx::query_scalar(&format!(
            "SELECT lease_token FROM {} WHERE id = ?",
            q.jobs_table()
        ))
        .bind(high.0)
        .fetch_one(q.pool())
        .await
        .unwrap();
        assert_eq!(token, first.lease.token);

        // ack, then a second ack is LeaseLost.
        q.ack(&first.lease).await.unwrap();
        let done = q.get(high).await.unwrap().unwrap();
        assert_eq!(done.state, JobState::Completed);
        assert!(done.finished_at.is_some() && done.lease_expires_at.is_none());
        assert!(matches!(
            q.ack(&first.lease).await,
            Err(Error::LeaseLost { .. })
        ));

        // extend returns the stored expiry.
        let second = &got[1];
        let extended = q
            .extend(&second.lease, Duration::from_secs(600))
            .await
            .unwrap();
        assert!(extended.expires_at > second.lease.expires_at);
        assert_eq!(
            q.get(low).await.unwrap().unwrap().lease_expires_at,
            Some(extended.expires_at)
        );

        // fail with attempts left -> pending later, attempts kept; then release semantics.
        let out = q
            .fail(
                &extended,
                Failure::retry_after("boom", Duration::from_secs(120)),
            )
            .await
            .unwrap();
        assert_eq!(
            out,
            queue_core::FailOutcome::Retrying {
                after: Duration::from_secs(120)
            }
        );
        let j = q.get(low).await.unwrap().unwrap();
        assert_eq!(
            (j.state, j.attempts, j.last_error.as_deref()),
            (JobState::Pending, 1, Some("boom"))
        );
        assert!(j.lease_expires_at.is_none());
        assert!(matches!(
            q.fail(&extended, Failure::retryable("again")).await,
            Err(Error::LeaseLost { .. })
        ));
        assert!(q.pop(PopRequest::new("life")).await.unwrap().is_empty());

        // release: back to pending now, attempt not counted.
        let r = q.push(job("life", 4)).await.unwrap();
        let l = q.pop(PopRequest::new("life")).await.unwrap().remove(0);
        assert_eq!(l.job.id, r);
        q.release(&l.lease).await.unwrap();
        let j = q.get(r).await.unwrap().unwrap();
        assert_eq!((j.state, j.attempts), (JobState::Pending, 0));
        assert!(matches!(
            q.release(&l.lease).await,
            Err(Error::LeaseLost { .. })
        ));

        // permanent failure -> dead; retry -> pending with attempts reset.
        let l = q.pop(PopRequest::new("life")).await.unwrap().remove(0);
        assert_eq!(
            q.fail(&l.lease, Failure::permanent("no")).await.unwrap(),
            queue_core::FailOutcome::Dead
        );
        let j = q.get(r).await.unwrap().unwrap();
        assert_eq!(j.state, JobState::Dead);
        assert!(j.finished_at.is_some());
        q.retry(r).await.unwrap();
        let j = q.get(r).await.unwrap().unwrap();
        assert_eq!((j.state, j.attempts), (JobState::Pending, 0));
        assert!(j.finished_at.is_none());
        assert!(matches!(
            q.retry(r).await,
            Err(Error::InvalidState {
                operation: "retry",
                ..
            })
        ));

        // cancel a running job: its holder sees Cancelled.
        let l = q.pop(PopRequest::new("life")).await.unwrap().remove(0);
        q.cancel(l.job.id).await.unwrap();
        assert!(matches!(
            q.ack(&l.lease).await,
            Err(Error::Cancelled { .. })
        ));
        assert!(matches!(
            q.extend(&l.lease, Duration::from_secs(1)).await,
            Err(Error::Cancelled { .. })
        ));
        assert!(matches!(
            q.cancel(l.job.id).await,
            Err(Error::InvalidState {
                operation: "cancel",
                ..
            })
        ));
        assert!(matches!(
            q.cancel(queue_core::JobId::new()).await,
            Err(Error::NotFound { .. })
        ));
        assert!(matches!(
            q.retry(queue_core::JobId::new()).await,
            Err(Error::NotFound { .. })
        ));

        // stats and list
        let stats = q.stats(Some("life")).await.unwrap();
        assert_eq!(stats.len(), 1);
        let s = &stats[0];
        assert_eq!(
            (
                s.available,
                s.scheduled,
                s.running,
                s.completed,
                s.dead,
                s.cancelled
            ),
            (0, 2, 0, 1, 0, 1)
        );
        let empty = q.stats(Some("nothing-here")).await.unwrap();
        assert_eq!(empty.len(), 1);
        assert_eq!(empty[0].count(JobState::Pending), 0);
        let listed = q
            .list(ListRequest {
                queue: Some("life".into()),
                state: None,
                limit: 10,
            })
            .await
            .unwrap();
        assert_eq!(listed.len(), 4);
        assert!(listed
            .windows(2)
            .all(|w| (w[0].created_at, w[0].id) >= (w[1].created_at, w[1].id)));
        let pending = q
            .list(ListRequest {
                queue: None,
                state: Some(JobState::Pending),
                limit: 10,
            })
            .await
            .unwrap();
        assert_eq!(pending.len(), 2);

        // prune finished rows older than zero: the completed and the cancelled one.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let n = q
            .prune(PruneRequest::older_than(Duration::ZERO))
            .await
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(count(&q, "state IN ('completed','cancelled')").await, 0);
        assert_eq!(count(&q, "1=1").await, 2);
        q.drop_tables().await.unwrap();
    }
}

#[tokio::test]
async fn extreme_priorities_keep_their_order() {
    for strategy in BOTH {
        let Some(q) = queue(strategy).await else {
            return;
        };
        let min = q.push(job("x", 1).priority(i32::MIN)).await.unwrap();
        let zero = q.push(job("x", 2)).await.unwrap();
        let max = q.push(job("x", 3).priority(i32::MAX)).await.unwrap();
        let zero2 = q.push(job("x", 4)).await.unwrap();
        let got = q.pop(PopRequest::new("x").limit(10)).await.unwrap();
        let ids: Vec<_> = got.iter().map(|l| l.job.id).collect();
        assert_eq!(ids, vec![max, zero, zero2, min], "{strategy:?}");
        assert_eq!(got[3].job.priority, i32::MIN);
        q.drop_tables().await.unwrap();
    }
}

#[tokio::test]
async fn payload_round_trips_exactly() {
    let Some(q) = queue(ClaimStrategy::SkipLocked).await else {
        return;
    };
    let text = r#"{"z": 1, "a": [1.50, "ünïcødé 🚀"], "nested": {"k": null}}"#;
    let id = q.push(NewJob::from_json("p", text).unwrap()).await.unwrap();
    assert_eq!(q.get(id).await.unwrap().unwrap().payload.get(), text);
    let l = q.pop(PopRequest::new("p")).await.unwrap().remove(0);
    assert_eq!(l.job.payload.get(), text);
    q.drop_tables().await.unwrap();
}

#[tokio::test]
async fn dedup_keys_are_unique_among_live_jobs() {
    let Some(q) = queue(ClaimStrategy::SkipLocked).await else {
        return;
    };
    let a = q.push(job("d", 1).dedup_key("k")).await.unwrap();
    match q.push(job("d", 2).dedup_key("k")).await {
        Err(Error::Duplicate { queue, dedup_key }) => {
            assert_eq!((queue.as_str(), dedup_key.as_str()), ("d", "k"))
        }
        other => panic!("{other:?}"),
    }
    // A clash on the primary key is not a dedup clash.
    let err = q.push(job("d", 2).with_id(a)).await.unwrap_err();
    assert!(matches!(err, Error::Database { .. }), "{err:?}");
    // Other queue, other case: fine.
    q.push(job("d2", 3).dedup_key("k")).await.unwrap();
    q.push(job("d", 3).dedup_key("K")).await.unwrap();
    // Batch with a clash stores nothing.
    let before = count(&q, "1=1").await;
    let batch = vec![
        job("d", 4),
        job("d", 5).dedup_key("new"),
        job("d", 6).dedup_key("k"),
    ];
    match q.push_batch(batch).await {
        Err(Error::Duplicate { dedup_key, .. }) => assert_eq!(dedup_key, "k"),
        other => panic!("{other:?}"),
    }
    let dup_in_batch = vec![job("d", 7).dedup_key("x"), job("d", 8).dedup_key("x")];
    assert!(matches!(
        q.push_batch(dup_in_batch).await,
        Err(Error::Duplicate { .. })
    ));
    assert_eq!(count(&q, "1=1").await, before);
    // Running still holds the key; finished frees it; retry of the old one then clashes.
    let l = q.pop(PopRequest::new("d")).await.unwrap().remove(0);
    assert_eq!(l.job.id, a);
    assert!(matches!(
        q.push(job("d", 9).dedup_key("k")).await,
        Err(Error::Duplicate { .. })
    ));
    q.fail(&l.lease, Failure::permanent("x")).await.unwrap();
    let b = q.push(job("d", 10).dedup_key("k")).await.unwrap();
    assert!(matches!(q.retry(a).await, Err(Error::Duplicate { .. })));
    assert_eq!(q.get(a).await.unwrap().unwrap().state, JobState::Dead);
    q.cancel(b).await.unwrap();
    q.retry(a).await.unwrap();
    q.drop_tables().await.unwrap();
}

#[tokio::test]
async fn push_batch_is_chunked_and_atomic() {
    let Some(q) = queue(ClaimStrategy::SkipLocked).await else {
        return;
    };
    let jobs: Vec<_> = (0..1_234).map(|n| job("b", n)).collect();
    let want: Vec<_> = jobs.iter().map(|j| j.id()).collect();
    let ids = q.push_batch(jobs).await.unwrap();
    assert_eq!(ids, want);
    assert_eq!(count(&q, "queue = 'b' AND state = 'pending'").await, 1_234);
    // A clash in the last chunk rolls back the earlier chunks too.
    q.push(job("c", 0).dedup_key("last")).await.unwrap();
    let mut jobs: Vec<_> = (0..1_100).map(|n| job("c", n)).collect();
    jobs.push(job("c", 9).dedup_key("last"));
    assert!(matches!(
        q.push_batch(jobs).await,
        Err(Error::Duplicate { .. })
    ));
    assert_eq!(count(&q, "queue = 'c'").await, 1);
    // Invalid job: nothing stored, the index named.
    let bad = vec![job("c", 1), job("c", 2).max_attempts(0)];
    match q.push_batch(bad).await {
        Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "jobs[1].max_attempts"),
        other => panic!("{other:?}"),
    }
    assert_eq!(count(&q, "queue = 'c'").await, 1);
    // ack_batch in one statement; lost leases skipped.
    let leased = q.pop(PopRequest::new("b").limit(100)).await.unwrap();
    assert_eq!(leased.len(), 100);
    q.ack(&leased[0].lease).await.unwrap();
    let leases: Vec<_> = leased.iter().map(|l| l.lease.clone()).collect();
    assert_eq!(q.ack_batch(&leases).await.unwrap(), 99);
    assert_eq!(count(&q, "state = 'completed'").await, 100);
    q.drop_tables().await.unwrap();
}

#[tokio::test]
async fn rescue_expired_leases() {
    for strategy in BOTH {
        let Some(q) = queue(strategy).await else {
            return;
        };
        let a = q.push(job("r", 1)).await.unwrap();
        let b = q.push(job("r", 2).max_attempts(1)).await.unwrap();
        let got = q
            .pop(
                PopRequest::new("r")
                    .limit(2)
                    .lease(Duration::from_millis(50)),
            )
            .await
            .unwrap();
        assert_eq!(got.len(), 2);
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(q.rescue_expired().await.unwrap(), 2);
        let ja = q.get(a).await.unwrap().unwrap();
        assert_eq!(ja.state, JobState::Pending);
        assert_eq!(ja.last_error.as_deref(), Some("lease expired"));
        let jb = q.get(b).await.unwrap().unwrap();
        assert_eq!(jb.state, JobState::Dead);
        assert!(jb.finished_at.is_some());
        // The old holder is fenced out; the job is delivered again with attempt 2.
        assert!(matches!(
            q.ack(&got[0].lease).await,
            Err(Error::LeaseLost { .. })
        ));
        let again = q.pop(PopRequest::new("r")).await.unwrap().remove(0);
        assert_eq!((again.job.id, again.lease.attempt), (a, 2));
        assert_eq!(q.rescue_expired().await.unwrap(), 0);
        q.drop_tables().await.unwrap();
    }
}

#[tokio::test]
async fn fail_uses_the_retry_policy() {
    let Some(q) = queue_with(ClaimStrategy::SkipLocked, |b| {
        b.retry_policy(RetryPolicy {
            base: Duration::from_secs(30),
            factor: 2.0,
            max: Duration::from_secs(100),
            jitter: 0.0,
        })
    })
    .await
    else {
        return;
    };
    let id = q.push(job("f", 1).max_attempts(2)).await.unwrap();
    let l = q.pop(PopRequest::new("f")).await.unwrap().remove(0);
    let before = q.now().await.unwrap();
    let out = q.fail(&l.lease, Failure::retryable("x")).await.unwrap();
    assert_eq!(
        out,
        queue_core::FailOutcome::Retrying {
            after: Duration::from_secs(30)
        }
    );
    let j = q.get(id).await.unwrap().unwrap();
    let delay = j.run_at - before;
    assert!(delay >= chrono::Duration::seconds(29) && delay <= chrono::Duration::seconds(31));
    // Make it due again, claim, fail: attempts used up -> dead.
    sqlx::query(&format!(
        "UPDATE {} SET run_at = UTC_TIMESTAMP(6) WHERE id = ?",
        q.jobs_table()
    ))
    .bind(id.0)
    .execute(q.pool())
    .await
    .unwrap();
    let l = q.pop(PopRequest::new("f")).await.unwrap().remove(0);
    assert_eq!(l.lease.attempt, 2);
    let long = "é".repeat(10_000);
    assert_eq!(
        q.fail(&l.lease, Failure::retryable(long)).await.unwrap(),
        queue_core::FailOutcome::Dead
    );
    let j = q.get(id).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Dead);
    assert_eq!(
        j.last_error.unwrap().chars().count(),
        queue_core::validate::MAX_ERROR_CHARS
    );
    q.drop_tables().await.unwrap();
}

#[tokio::test]
async fn push_in_tx_exists_iff_the_transaction_commits() {
    let Some(q) = queue(ClaimStrategy::SkipLocked).await else {
        return;
    };
    let mut tx = q.pool().begin().await.unwrap();
    let rolled = q.push_in_tx(&mut tx, job("tx", 1)).await.unwrap();
    let batch = q
        .push_batch_in_tx(&mut tx, vec![job("tx", 2), job("tx", 3)])
        .await
        .unwrap();
    // Not visible to others before commit.
    assert!(q.get(rolled).await.unwrap().is_none());
    assert!(q
        .pop(PopRequest::new("tx").limit(10))
        .await
        .unwrap()
        .is_empty());
    tx.rollback().await.unwrap();
    assert!(q.get(rolled).await.unwrap().is_none());
    assert!(q.get(batch[0]).await.unwrap().is_none());
    assert_eq!(count(&q, "1=1").await, 0);

    // A failed batch inside the transaction stores nothing and keeps the caller's earlier push.
    q.push(job("tx", 0).dedup_key("taken")).await.unwrap();
    let mut tx = q.pool().begin().await.unwrap();
    let kept = q.push_in_tx(&mut tx, job("tx", 4)).await.unwrap();
    let mut clash: Vec<_> = (0..600).map(|n| job("tx", 10 + n)).collect();
    clash.push(job("tx", 9).dedup_key("taken"));
    assert!(matches!(
        q.push_batch_in_tx(&mut tx, clash).await,
        Err(Error::Duplicate { .. })
    ));
    tx.commit().await.unwrap();
    assert_eq!(count(&q, "1=1").await, 2);
    sqlx::query(&format!(
        "DELETE FROM {} WHERE dedup_key = 'taken'",
        q.jobs_table()
    ))
    .execute(q.pool())
    .await
    .unwrap();
    q.notify_pushed("tx", 1);
    let got = q.pop(PopRequest::new("tx").limit(10)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].job.id, kept);
    q.drop_tables().await.unwrap();
}

#[tokio::test]
async fn complete_in_tx_commits_with_the_callers_writes() {
    for strategy in BOTH {
        let Some(q) = queue(strategy).await else {
            return;
        };
        let side = format!("{}side", q.table_prefix());
        sqlx::query(&format!(
            "CREATE TABLE {side} (id INT PRIMARY KEY, note VARCHAR(32))"
        ))
        .execute(q.pool())
        .await
        .unwrap();

        // Lease current: completion and the caller's write commit together.
        let id = q.push(job("ct", 1)).await.unwrap();
        let l = q.pop(PopRequest::new("ct")).await.unwrap().remove(0);
        let mut tx = q.pool().begin().await.unwrap();
        sqlx::query(&format!("INSERT INTO {side} VALUES (1, 'done')"))
            .execute(&mut *tx)
            .await
            .unwrap();
        q.complete_in_tx(&mut tx, &l.lease).await.unwrap();
        // Not completed for others until commit.
        assert_eq!(q.get(id).await.unwrap().unwrap().state, JobState::Running);
        tx.commit().await.unwrap();
        assert_eq!(q.get(id).await.unwrap().unwrap().state, JobState::Completed);

        // Lease lost: LeaseLost, the caller rolls back, its write is gone.
        let id = q.push(job("ct", 2)).await.unwrap();
        let l = q
            .pop(PopRequest::new("ct").lease(Duration::from_millis(20)))
            .await
            .unwrap()
            .remove(0);
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(q.rescue_expired().await.unwrap(), 1);
        let mut tx = q.pool().begin().await.unwrap();
        sqlx::query(&format!("INSERT INTO {side} VALUES (2, 'lost')"))
            .execute(&mut *tx)
            .await
            .unwrap();
        let err = q.complete_in_tx(&mut tx, &l.lease).await.unwrap_err();
        assert!(
            matches!(err, Error::LeaseLost { job } if job == id),
            "{err:?}"
        );
        tx.rollback().await.unwrap();
        let n: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {side} WHERE id = 2"))
            .fetch_one(q.pool())
            .await
            .unwrap();
        assert_eq!(n, 0);
        assert_eq!(q.get(id).await.unwrap().unwrap().state, JobState::Pending);

        // Cancelled while held: Cancelled.
        let l = q.pop(PopRequest::new("ct")).await.unwrap().remove(0);
        q.cancel(l.job.id).await.unwrap();
        let mut tx = q.pool().begin().await.unwrap();
        assert!(matches!(
            q.complete_in_tx(&mut tx, &l.lease).await,
            Err(Error::Cancelled { .. })
        ));
        tx.rollback().await.unwrap();

        sqlx::query(&format!("DROP TABLE {side}"))
            .execute(q.pool())
            .await
            .unwrap();
        q.drop_tables().await.unwrap();
    }
}

/// 32 poppers drain 2,000 jobs while a producer keeps pushing: every job is delivered exactly
/// once (attempt 1, one holder), none is left, and no deadlock surfaces.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_poppers_get_every_job_exactly_once() {
    for strategy in BOTH {
        let Some(q) = queue(strategy).await else {
            return;
        };
        const PRELOADED: u64 = 1_500;
        const PRODUCED: u64 = 700;
        let jobs: Vec<_> = (0..PRELOADED)
            .map(|n| job("conc", n).priority((n % 3) as i32))
            .collect();
        q.push_batch(jobs).await.unwrap();

        let started = std::time::Instant::now();
        let producing = Arc::new(AtomicBool::new(true));
        let producer = {
            let q = q.clone();
            let producing = producing.clone();
            tokio::spawn(async move {
                for n in 0..PRODUCED {
                    if n % 10 == 0 {
                        let batch = (n..n + 10).map(|m| job("conc", PRELOADED + m)).collect();
                        q.push_batch(batch).await.unwrap();
                    }
                }
                producing.store(false, Ordering::SeqCst);
            })
        };
        let total = PRELOADED + PRODUCED;
        let poppers: Vec<_> = (0..32)
            .map(|w| {
                let q = q.clone();
                let producing = producing.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    loop {
                        let still_producing = producing.load(Ordering::SeqCst);
                        let got = q
                            .pop(
                                PopRequest::new("conc")
                                    .limit(1 + w % 8)
                                    .worker(format!("w{w}")),
                            )
                            .await
                            .expect("pop must not surface lock conflicts");
                        if got.is_empty() {
                            if !still_producing {
                                break;
                            }
                            q.wait_for_work("conc", Duration::from_millis(20)).await;
                            continue;
                        }
                        let leases: Vec<_> = got.iter().map(|l| l.lease.clone()).collect();
                        for l in &got {
                            assert_eq!(l.lease.attempt, 1);
                            seen.push(l.job.id);
                        }
                        if w % 2 == 0 {
                            assert_eq!(q.ack_batch(&leases).await.unwrap(), leases.len() as u64);
                        } else {
                            for l in &leases {
                                q.ack(l).await.unwrap();
                            }
                        }
                    }
                    seen
                })
            })
            .collect();
        producer.await.unwrap();
        let mut all = Vec::new();
        for p in poppers {
            all.extend(p.await.unwrap());
        }
        let distinct: HashSet<_> = all.iter().collect();
        assert_eq!(
            distinct.len(),
            all.len(),
            "{strategy:?}: a job was delivered twice"
        );
        assert_eq!(all.len() as u64, total, "{strategy:?}: every job delivered");
        assert_eq!(
            count(&q, "state = 'completed' AND attempts = 1").await,
            total as i64
        );
        assert_eq!(count(&q, "state <> 'completed'").await, 0);
        eprintln!(
            "{strategy:?}: {total} jobs, 32 poppers, {:?}",
            started.elapsed()
        );
        q.drop_tables().await.unwrap();
    }
}

#[tokio::test]
async fn bad_input_is_rejected_before_the_database() {
    let Some(q) = queue(ClaimStrategy::SkipLocked).await else {
        return;
    };
    assert!(matches!(
        q.push(job("", 1)).await,
        Err(Error::InvalidInput { ref field, .. }) if field == "queue"
    ));
    assert!(matches!(
        q.pop(PopRequest::new("q").limit(0)).await,
        Err(Error::InvalidInput { ref field, .. }) if field == "limit"
    ));
    let l = {
        q.push(job("q", 1)).await.unwrap();
        q.pop(PopRequest::new("q")).await.unwrap().remove(0)
    };
    assert!(matches!(
        q.extend(&l.lease, Duration::from_secs(100_000)).await,
        Err(Error::InvalidInput { ref field, .. }) if field == "by"
    ));
    assert!(matches!(
        q.prune(PruneRequest {
            older_than: Duration::ZERO,
            states: vec![JobState::Running],
            queue: None
        })
        .await,
        Err(Error::InvalidInput { .. })
    ));
    assert_eq!(count(&q, "1=1").await, 1);
    q.drop_tables().await.unwrap();
}

#[tokio::test]
async fn schema_uses_the_claim_index() {
    let Some(q) = queue(ClaimStrategy::SkipLocked).await else {
        return;
    };
    q.push_batch(
        (0..200)
            .map(|n| job("x", n).priority((n % 4) as i32))
            .collect(),
    )
    .await
    .unwrap();
    let sql = format!(
        "EXPLAIN SELECT id FROM {} WHERE queue = 'x' AND state = 'pending' \
         AND run_at <= UTC_TIMESTAMP(6) ORDER BY claim_priority, run_at, id LIMIT 10 \
         FOR UPDATE SKIP LOCKED",
        q.jobs_table()
    );
    let row = sqlx::query(&sql).fetch_one(q.pool()).await.unwrap();
    let key: Option<String> = row.try_get_unchecked("key").unwrap();
    let extra: Option<String> = row.try_get_unchecked("Extra").unwrap();
    assert_eq!(key.as_deref(), Some("claim"));
    assert!(
        !extra.unwrap_or_default().contains("filesort"),
        "the claim must not sort"
    );
    q.drop_tables().await.unwrap();
}

/// Short leases, slow holders and a busy rescuer: leases expire while their holders still work,
/// so claims, acks, fails and rescues race on the same rows. Every job still completes exactly
/// once (one successful ack per job), stale holders get LeaseLost, and no lock conflict surfaces.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expiring_leases_under_a_busy_rescuer() {
    for strategy in BOTH {
        let Some(q) = queue(strategy).await else {
            return;
        };
        const JOBS: u64 = 400;
        q.push_batch(
            (0..JOBS)
                .map(|n| job("chaos", n).max_attempts(1_000))
                .collect(),
        )
        .await
        .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let rescuer = {
            let q = q.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut rescued = 0;
                while !stop.load(Ordering::SeqCst) {
                    rescued += q.rescue_expired().await.expect("rescue");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                rescued
            })
        };
        let acked = Arc::new(AtomicUsize::new(0));
        let lost = Arc::new(AtomicUsize::new(0));
        let poppers: Vec<_> = (0..16)
            .map(|w| {
                let q = q.clone();
                let (acked, lost) = (acked.clone(), lost.clone());
                tokio::spawn(async move {
                    let mut done = Vec::new();
                    let mut idle = 0;
                    while idle < 40 {
                        let got = q
                            .pop(
                                PopRequest::new("chaos")
                                    .limit(1 + w % 4)
                                    .lease(Duration::from_millis(30)),
                            )
                            .await
                            .expect("pop");
                        if got.is_empty() {
                            idle += 1;
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                        idle = 0;
                        for l in got {
                            // Some holders are too slow for their lease.
                            tokio::time::sleep(Duration::from_millis(fastrand::u64(0..45))).await;
                            let r = if fastrand::u8(0..5) == 0 {
                                q.fail(&l.lease, Failure::retry_after("again", Duration::ZERO))
                                    .await
                                    .map(|_| false)
                            } else {
                                q.ack(&l.lease).await.map(|()| true)
                            };
                            match r {
                                Ok(true) => {
                                    acked.fetch_add(1, Ordering::SeqCst);
                                    done.push(l.job.id);
                                }
                                Ok(false) => {}
                                Err(Error::LeaseLost { .. }) => {
                                    lost.fetch_add(1, Ordering::SeqCst);
                                }
                                Err(e) => panic!("{strategy:?}: unexpected {e:?}"),
                            }
                        }
                    }
                    done
                })
            })
            .collect();
        let mut all = Vec::new();
        for p in poppers {
            all.extend(p.await.unwrap());
        }
        stop.store(true, Ordering::SeqCst);
        let rescued = rescuer.await.unwrap();
        let distinct: HashSet<_> = all.iter().collect();
        assert_eq!(
            distinct.len(),
            all.len(),
            "{strategy:?}: a job was completed twice"
        );
        assert_eq!(all.len() as u64, JOBS, "{strategy:?}: every job completed");
        assert_eq!(count(&q, "state = 'completed'").await, JOBS as i64);
        eprintln!(
            "{strategy:?}: {JOBS} jobs, {} lease-lost acks, {rescued} rescues",
            lost.load(Ordering::SeqCst)
        );
        q.drop_tables().await.unwrap();
    }
}

#[tokio::test]
async fn a_push_wakes_a_waiting_worker() {
    let Some(q) = queue(ClaimStrategy::SkipLocked).await else {
        return;
    };
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            q.wait_for_work("wake", Duration::from_secs(30)).await;
            started.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    q.push(job("wake", 1)).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the waiter was not woken")
        .unwrap();
    assert!(waited < Duration::from_secs(2), "woke after {waited:?}");
    assert_eq!(q.pop(PopRequest::new("wake")).await.unwrap().len(), 1);
    q.drop_tables().await.unwrap();
}

#[tokio::test]
async fn a_closed_pool_is_unavailable() {
    let Some(q) = queue(ClaimStrategy::SkipLocked).await else {
        return;
    };
    let admin = MySqlQueue::builder(url())
        .table_prefix(q.table_prefix())
        .connect()
        .await
        .unwrap();
    q.pool().close().await;
    let err = q.push(job("closed", 1)).await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    let err = q.pop(PopRequest::new("closed")).await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert_eq!(count(&admin, "1=1").await, 0);
    admin.drop_tables().await.unwrap();
}
