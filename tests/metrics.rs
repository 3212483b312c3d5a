//! The queue's metrics, read through a recorder installed by the test: a push, a drain by a
//! worker with successes, a retry, dead jobs and a snooze, on the default backend (SQLite).

#![cfg(feature = "sqlite")]

use std::time::Duration;

use dbqueue::metrics::{
    CLAIM_SECONDS, JOBS_CANCELLED, JOBS_CLAIMED, JOBS_COMPLETED, JOBS_DEAD, JOBS_FAILED,
    JOBS_PUSHED, JOBS_RETRIED, JOBS_SNOOZED, JOB_RUN_SECONDS, JOB_WAIT_SECONDS, QUEUE_JOBS,
    QUEUE_OLDEST_DUE_SECONDS,
};
use dbqueue::{JobError, NewJob, Worker};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::{CompositeKey, MetricKind};
use serde_json::json;

/// Everything recorded so far (taking it empties the histograms: take it once per check).
type Taken = Vec<(CompositeKey, DebugValue)>;

fn take(snap: &Snapshotter) -> Taken {
    snap.snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, _, _, v)| (k, v))
        .collect()
}

/// What the recorder held for `name` with exactly the labels `labels`.
fn value<'a>(
    all: &'a Taken,
    kind: MetricKind,
    name: &str,
    labels: &[(&str, &str)],
) -> &'a DebugValue {
    let mut want: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    want.sort();
    for (key, v) in all {
        let mut got: Vec<(String, String)> = key
            .key()
            .labels()
            .map(|l| (l.key().to_owned(), l.value().to_owned()))
            .collect();
        got.sort();
        if key.kind() == kind && key.key().name() == name && got == want {
            return v;
        }
    }
    panic!("no {kind:?} {name} with labels {labels:?}")
}

fn counter(all: &Taken, name: &str, labels: &[(&str, &str)]) -> u64 {
    match value(all, MetricKind::Counter, name, labels) {
        DebugValue::Counter(n) => *n,
        other => panic!("{name}: {other:?}"),
    }
}

fn samples(all: &Taken, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
    match value(all, MetricKind::Histogram, name, labels) {
        DebugValue::Histogram(v) => v.iter().map(|f| f.into_inner()).collect(),
        other => panic!("{name}: {other:?}"),
    }
}

// One thread: the recorder is this thread's, and every task of the queue and the worker runs on it.
#[tokio::test(flavor = "current_thread")]
async fn a_drain_is_counted_by_queue_and_kind() {
    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(&recorder);

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("metrics.db").display());
    let queue = dbqueue::connect_and_migrate(&url).await.unwrap();
    let mut jobs = Vec::new();
    for _ in 0..4 {
        jobs.push(NewJob::new("mail", &json!("ok")).unwrap().kind("send"));
    }
    for _ in 0..2 {
        jobs.push(NewJob::new("mail", &json!("perm")).unwrap().kind("bounce"));
    }
    jobs.push(
        NewJob::new("mail", &json!("flaky"))
            .unwrap()
            .kind("retry")
            .max_attempts(3),
    );
    jobs.push(NewJob::new("mail", &json!("later")).unwrap());
    queue.push_batch(jobs).await.unwrap();
    let pushed = take(&snap);
    assert_eq!(
        counter(&pushed, JOBS_PUSHED, &[("queue", "mail"), ("kind", "send")]),
        4
    );
    assert_eq!(
        counter(&pushed, JOBS_PUSHED, &[("queue", "mail"), ("kind", "")]),
        1
    );

    let handle = Worker::builder(queue.clone(), "mail")
        .handler_fn(|ctx| async move {
            match ctx.payload::<String>()?.as_str() {
                "perm" => Err(JobError::permanent("no such mailbox")),
                "flaky" => Err(JobError::retry_after(
                    "try later",
                    Duration::from_secs(3600),
                )),
                "later" => Err(JobError::snooze(Duration::from_secs(3600))),
                _ => Ok(()),
            }
        })
        .build()
        .unwrap()
        .start();
    let counters = handle.counters();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while counters.completed() + counters.dead() + counters.retried() + counters.snoozed() < 8 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the drain did not end: {:?}",
            counters.snapshot()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    handle.shutdown(Duration::from_secs(5)).await;
    let snap_after = take(&snap);

    let send = [("queue", "mail"), ("kind", "send")];
    let bounce = [("queue", "mail"), ("kind", "bounce")];
    let retry = [("queue", "mail"), ("kind", "retry")];
    let none = [("queue", "mail"), ("kind", "")];
    assert_eq!(counter(&snap_after, JOBS_CLAIMED, &[("queue", "mail")]), 8);
    assert!(!samples(&snap_after, CLAIM_SECONDS, &[("queue", "mail")]).is_empty());
    assert_eq!(counter(&snap_after, JOBS_COMPLETED, &send), 4);
    assert_eq!(counter(&snap_after, JOBS_FAILED, &bounce), 2);
    assert_eq!(counter(&snap_after, JOBS_DEAD, &bounce), 2);
    assert_eq!(counter(&snap_after, JOBS_FAILED, &retry), 1);
    assert_eq!(counter(&snap_after, JOBS_RETRIED, &retry), 1);
    assert_eq!(counter(&snap_after, JOBS_DEAD, &retry), 0);
    assert_eq!(counter(&snap_after, JOBS_SNOOZED, &none), 1);
    assert_eq!(counter(&snap_after, JOBS_COMPLETED, &bounce), 0);
    let runs = samples(&snap_after, JOB_RUN_SECONDS, &send);
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|s| (0.0..5.0).contains(s)), "{runs:?}");
    let waits = samples(&snap_after, JOB_WAIT_SECONDS, &send);
    assert_eq!(waits.len(), 4);
    assert!(waits.iter().all(|s| (0.0..20.0).contains(s)), "{waits:?}");

    // The gauges, from the database: 4 + 0 completed, 2 + 0 dead, 2 pending for later.
    dbqueue::metrics::record_queue_gauges(queue.as_ref())
        .await
        .unwrap();
    let gauges = take(&snap);
    let gauge = |state: &str| match value(
        &gauges,
        MetricKind::Gauge,
        QUEUE_JOBS,
        &[("queue", "mail"), ("state", state)],
    ) {
        DebugValue::Gauge(v) => v.into_inner(),
        other => panic!("{other:?}"),
    };
    assert_eq!(gauge("completed"), 4.0);
    assert_eq!(gauge("dead"), 2.0);
    assert_eq!(gauge("scheduled"), 2.0);
    assert_eq!(gauge("available"), 0.0);
    assert_eq!(gauge("running"), 0.0);

    // Cancels: one by id, then the rest of the queue in bulk (the retried and the snoozed job
    // are pending, one more is pushed to another queue and cancelled in bulk with them).
    let pending = queue
        .list(dbqueue::ListRequest {
            queue: Some("mail".into()),
            state: Some(dbqueue::JobState::Pending),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(pending.len(), 2);
    queue.cancel(pending[0].id).await.unwrap();
    let bulk = queue
        .bulk(
            dbqueue::BulkAction::Cancel,
            &dbqueue::JobFilter {
                queue: Some("mail".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(bulk.changed, 1);
    queue.push(NewJob::new("other", &1).unwrap()).await.unwrap();
    queue.push(NewJob::new("mail", &1).unwrap()).await.unwrap();
    let all = queue
        .bulk(dbqueue::BulkAction::Cancel, &dbqueue::JobFilter::default())
        .await
        .unwrap();
    assert_eq!(all.changed, 2);
    let cancels = take(&snap);
    assert_eq!(counter(&cancels, JOBS_CANCELLED, &[("queue", "mail")]), 2);
    // A bulk cancel over several queues counts under no queue.
    assert_eq!(counter(&cancels, JOBS_CANCELLED, &[("queue", "")]), 2);
}

// One thread: the recorder is this thread's, and every task of the queue and the worker runs on it.
#[tokio::test(flavor = "current_thread")]
async fn a_worker_with_queue_gauges_samples_them_from_the_database() {
    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(&recorder);

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("gauges.db").display());
    let queue = dbqueue::connect_and_migrate(&url).await.unwrap();
    // A queue no worker serves: three jobs due, one for later.
    let pushed_at = queue.now().await.unwrap();
    let jobs = (0..3)
        .map(|i| NewJob::new("backlog", &i).unwrap())
        .collect();
    queue.push_batch(jobs).await.unwrap();
    queue
        .push(
            NewJob::new("backlog", &9)
                .unwrap()
                .delay(Duration::from_secs(3600)),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let handle = Worker::builder(queue.clone(), "mail")
        .handler_fn(|_ctx| async move { Ok(()) })
        .queue_gauges(Duration::from_secs(5))
        .build()
        .unwrap()
        .start();
    let gauge = |all: &Taken, name: &str, labels: &[(&str, &str)]| {
        all.iter().any(|(k, _)| k.key().name() == name).then(|| {
            match value(all, MetricKind::Gauge, name, labels) {
                DebugValue::Gauge(v) => v.into_inner(),
                other => panic!("{other:?}"),
            }
        })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let (available, oldest) = loop {
        let all = take(&snap);
        if let Some(available) = gauge(
            &all,
            QUEUE_JOBS,
            &[("queue", "backlog"), ("state", "available")],
        ) {
            let oldest = gauge(&all, QUEUE_OLDEST_DUE_SECONDS, &[("queue", "backlog")]).unwrap();
            let scheduled = gauge(
                &all,
                QUEUE_JOBS,
                &[("queue", "backlog"), ("state", "scheduled")],
            );
            assert_eq!(scheduled, Some(1.0));
            break (available, oldest);
        }
        assert!(tokio::time::Instant::now() < deadline, "no gauges sampled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let sampled_by = (queue.now().await.unwrap() - pushed_at).to_std().unwrap();
    // The worker holds the sampler's lease: another holder is refused while it runs.
    let other = uuid::Uuid::new_v4();
    assert!(!queue
        .gauge_lease(other, Duration::from_secs(15))
        .await
        .unwrap());
    handle.shutdown(Duration::from_secs(5)).await;
    assert_eq!(available, 3.0);
    // Stopped, it exports 0 (the next holder's numbers are the ones that count) and has given
    // the lease up: another holder takes it at once.
    let all = take(&snap);
    assert_eq!(
        gauge(
            &all,
            QUEUE_JOBS,
            &[("queue", "backlog"), ("state", "available")]
        ),
        Some(0.0)
    );
    assert_eq!(
        gauge(&all, QUEUE_OLDEST_DUE_SECONDS, &[("queue", "backlog")]),
        Some(0.0)
    );
    assert!(queue
        .gauge_lease(other, Duration::from_secs(15))
        .await
        .unwrap());
    // Due when pushed, waited at least the 300 ms before the worker started, and no longer
    // than until now.
    assert!(
        (0.3..=sampled_by.as_secs_f64() + 0.01).contains(&oldest),
        "oldest due {oldest} s, sampled within {sampled_by:?} of the push"
    );
}
