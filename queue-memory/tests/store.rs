//! The in-memory backend through its public API, for what the conformance catalogue does not
//! cover: named and private stores, the manual clock and Tokio's, and claim order over many
//! priorities and run times.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use dbqueue_memory::MemoryQueue;
use queue_core::{
    Error, JobId, JobState, ManualClock, NewJob, PopRequest, Queue, Retention, RetentionReport,
};

/// A store name no other test uses.
fn unique_name(tag: &str) -> String {
    format!("store-test-{tag}-{}", uuid::Uuid::new_v4())
}

async fn migrated(q: MemoryQueue) -> MemoryQueue {
    q.migrate().await.unwrap();
    q
}

#[tokio::test]
async fn named_stores_are_shared_and_private_ones_are_not() {
    let name = unique_name("shared");
    let a = migrated(MemoryQueue::builder().name(&name).connect().await.unwrap()).await;
    let b = MemoryQueue::builder()
        .url(format!("memory://{name}"))
        .connect()
        .await
        .unwrap();
    assert_eq!(a.store_name(), Some(name.as_str()));
    let id = a.push(NewJob::new("q", &1).unwrap()).await.unwrap();
    // B sees A's job (and A's migration), claims it, and A sees the claim.
    let got = b.pop(PopRequest::new("q")).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].job.id, id);
    assert_eq!(a.get(id).await.unwrap().unwrap().state, JobState::Running);

    // A private store, and another private store: each sees only its own jobs.
    let p1 = migrated(MemoryQueue::builder().connect().await.unwrap()).await;
    let p2 = migrated(
        MemoryQueue::builder()
            .url("memory://")
            .connect()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(p1.store_name(), None);
    assert!(p1.get(id).await.unwrap().is_none());
    let mine = p1.push(NewJob::new("q", &2).unwrap()).await.unwrap();
    assert!(p2.get(mine).await.unwrap().is_none());
    assert!(a.get(mine).await.unwrap().is_none());
    // Clones of a private queue share its store.
    assert!(p1.clone().get(mine).await.unwrap().is_some());
}

#[tokio::test]
async fn a_named_store_lives_as_long_as_a_queue_on_it() {
    let name = unique_name("lifetime");
    let first = migrated(MemoryQueue::builder().name(&name).connect().await.unwrap()).await;
    let id = first.push(NewJob::new("q", &1).unwrap()).await.unwrap();
    let second = MemoryQueue::builder().name(&name).connect().await.unwrap();
    drop(first);
    // Still open through the second queue value.
    assert!(second.get(id).await.unwrap().is_some());
    drop(second);
    // Gone with the last one: the name opens a new, empty store (not even migrated).
    let again = MemoryQueue::builder().name(&name).connect().await.unwrap();
    assert!(matches!(again.get(id).await, Err(Error::Database { .. })));
    again.migrate().await.unwrap();
    assert!(again.get(id).await.unwrap().is_none());
}

#[tokio::test]
async fn queue_values_on_one_store_share_its_clock() {
    let name = unique_name("clock");
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2031, 5, 6, 7, 8, 9).unwrap());
    let a = MemoryQueue::builder()
        .name(&name)
        .clock(clock.clone())
        .connect()
        .await
        .unwrap();
    // The same clock: fine. Another clock, or the system's: refused, naming the clock.
    let b = MemoryQueue::builder()
        .name(&name)
        .clock(clock.clone())
        .connect()
        .await
        .unwrap();
    assert_eq!(a.now().await.unwrap(), b.now().await.unwrap());
    for other in [
        MemoryQueue::builder()
            .name(&name)
            .clock(ManualClock::new(Utc::now())),
        MemoryQueue::builder().name(&name),
    ] {
        match other.connect().await {
            Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "clock"),
            r => panic!("expected the clock refused, got {r:?}"),
        }
    }
}

#[tokio::test]
async fn the_manual_clock_decides_what_is_due_and_what_expired() {
    let start = Utc.with_ymd_and_hms(2031, 5, 6, 7, 8, 9).unwrap();
    let clock = ManualClock::new(start);
    let q = migrated(
        MemoryQueue::builder()
            .clock(clock.clone())
            .connect()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(q.now().await.unwrap(), start);
    let id = q
        .push(
            NewJob::new("later", &1)
                .unwrap()
                .delay(Duration::from_secs(3600)),
        )
        .await
        .unwrap();
    let job = q.get(id).await.unwrap().unwrap();
    assert_eq!(job.run_at, start + chrono::Duration::hours(1));
    assert_eq!(job.created_at, start);
    assert!(q.pop(PopRequest::new("later")).await.unwrap().is_empty());
    let stats = &q.stats(Some("later")).await.unwrap()[0];
    assert_eq!((stats.available, stats.scheduled), (0, 1));

    clock.advance(Duration::from_secs(3599));
    assert!(q.pop(PopRequest::new("later")).await.unwrap().is_empty());
    clock.advance(Duration::from_secs(1));
    let got = q
        .pop(PopRequest::new("later").lease(Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    let lease = &got[0].lease;
    assert_eq!(
        lease.expires_at,
        start + chrono::Duration::hours(1) + chrono::Duration::seconds(30)
    );

    // An instant is an instant of the store's clock: a job pushed to run at one is due then.
    let at = start + chrono::Duration::hours(2);
    let timed = q
        .push(NewJob::new("at", &1).unwrap().run_at(at))
        .await
        .unwrap();
    assert_eq!(q.get(timed).await.unwrap().unwrap().run_at, at);

    // The lease expires when the clock says so, not before.
    assert_eq!(q.rescue_expired().await.unwrap(), 0);
    clock.advance(Duration::from_secs(30));
    assert_eq!(
        q.rescue_expired().await.unwrap(),
        0,
        "expired means past it"
    );
    clock.advance(Duration::from_millis(1));
    assert_eq!(q.rescue_expired().await.unwrap(), 1);
    let job = q.get(id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Pending);
    assert_eq!(job.errors.len(), 1);
    assert_eq!(job.errors[0].at, q.now().await.unwrap());

    // Retention ages count by it too: a job completed now is not a day old until the clock
    // says a day has passed.
    let got = q.pop(PopRequest::new("later")).await.unwrap();
    q.ack(&got[0].lease).await.unwrap();
    let rules = Retention::off()
        .delete_after(JobState::Completed, Duration::from_secs(24 * 3600))
        .interval(Duration::from_secs(60));
    let report: Option<RetentionReport> = q.run_retention(&rules).await.unwrap();
    assert_eq!(report.map(|r| r.completed), Some(0));
    assert!(q.get(id).await.unwrap().is_some());
    clock.advance(Duration::from_secs(24 * 3600 + 1));
    let report = q.run_retention(&rules).await.unwrap();
    assert_eq!(report.map(|r| r.completed), Some(1));
    assert!(q.get(id).await.unwrap().is_none());
}

/// On Tokio's clock, the store's time is the system's when it opened plus Tokio's time since:
/// paused time moves run times and leases, and nothing else does.
#[tokio::test(start_paused = true)]
async fn tokio_s_clock_moves_with_paused_time() {
    let opened = Utc::now();
    let q = migrated(
        MemoryQueue::builder()
            .tokio_clock()
            .connect()
            .await
            .unwrap(),
    )
    .await;
    let start = q.now().await.unwrap();
    assert!(
        (start - opened).abs() < chrono::Duration::seconds(5),
        "{start} {opened}"
    );
    tokio::time::advance(Duration::from_secs(90)).await;
    assert_eq!(
        q.now().await.unwrap(),
        start + chrono::Duration::seconds(90)
    );

    let id = q
        .push(
            NewJob::new("later", &1)
                .unwrap()
                .delay(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(59)).await;
    assert!(q.pop(PopRequest::new("later")).await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let got = q
        .pop(PopRequest::new("later").lease(Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(got[0].job.id, id);
    assert_eq!(
        got[0].lease.expires_at,
        start + chrono::Duration::seconds(90 + 60 + 30)
    );
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(
        q.rescue_expired().await.unwrap(),
        0,
        "expired means past it"
    );
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(q.rescue_expired().await.unwrap(), 1);
}

/// Queue values on one named store share Tokio's clock as the first one opened it; one on
/// another clock is refused.
#[tokio::test(start_paused = true)]
async fn queue_values_on_one_store_share_tokio_s_clock() {
    let name = unique_name("tokio-clock");
    let a = migrated(
        MemoryQueue::builder()
            .name(&name)
            .tokio_clock()
            .connect()
            .await
            .unwrap(),
    )
    .await;
    tokio::time::advance(Duration::from_secs(10)).await;
    let b = MemoryQueue::builder()
        .name(&name)
        .tokio_clock()
        .connect()
        .await
        .unwrap();
    assert_eq!(a.now().await.unwrap(), b.now().await.unwrap());
    for other in [
        MemoryQueue::builder().name(&name),
        MemoryQueue::builder()
            .name(&name)
            .clock(ManualClock::new(Utc::now())),
    ] {
        match other.connect().await {
            Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "clock"),
            r => panic!("expected the clock refused, got {r:?}"),
        }
    }
    // The last builder call chooses: a manual clock after Tokio's replaces it.
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2031, 5, 6, 7, 8, 9).unwrap());
    let manual = MemoryQueue::builder()
        .tokio_clock()
        .clock(clock.clone())
        .connect()
        .await
        .unwrap();
    assert_eq!(manual.now().await.unwrap(), clock.get());
}

/// Claims take jobs in claim order (priority descending, then run time, then id) whatever the
/// mix of priorities and run times, across pops of any size, and never a job not yet due.
#[tokio::test]
async fn claims_follow_the_claim_order_over_many_priorities() {
    fastrand::seed(7);
    let start = Utc.with_ymd_and_hms(2031, 1, 1, 0, 0, 0).unwrap();
    let clock = ManualClock::new(start);
    let q = migrated(
        MemoryQueue::builder()
            .clock(clock.clone())
            .connect()
            .await
            .unwrap(),
    )
    .await;
    let mut want: Vec<(i32, chrono::DateTime<Utc>, JobId)> = Vec::new();
    let mut later = 0;
    for batch in 0..20 {
        let jobs: Vec<NewJob> = (0..50)
            .map(|i| {
                let job = NewJob::new("order", &(batch * 50 + i))
                    .unwrap()
                    .priority(fastrand::i32(-50..=50));
                // Some due at once, some within the next minute (many at the same instant),
                // some in an hour (not due when the queue is drained).
                match fastrand::u8(..4) {
                    0 => job,
                    1 | 2 => job.delay(Duration::from_secs(fastrand::u64(..60))),
                    _ => job.delay(Duration::from_secs(3600)),
                }
            })
            .collect();
        for id in q.push_batch(jobs).await.unwrap() {
            let job = q.get(id).await.unwrap().unwrap();
            if job.run_at > start + chrono::Duration::minutes(1) {
                later += 1;
            } else {
                want.push((job.priority, job.run_at, id));
            }
        }
    }
    want.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    clock.advance(Duration::from_secs(60));
    let mut got = Vec::new();
    loop {
        let req = PopRequest::new("order").limit(fastrand::usize(1..=100));
        let claimed = q.pop(req).await.unwrap();
        if claimed.is_empty() {
            break;
        }
        got.extend(
            claimed
                .into_iter()
                .map(|l| (l.job.priority, l.job.run_at, l.job.id)),
        );
    }
    assert_eq!(got.len(), want.len());
    assert!(got == want, "claims left the claim order");
    let stats = &q.stats(Some("order")).await.unwrap()[0];
    assert_eq!((stats.scheduled, stats.running), (later, want.len() as u64));
}

/// A worker waiting on one queue value wakes at once when another queue value on the store
/// pushes, however long its poll interval.
#[tokio::test]
async fn a_push_on_one_queue_value_wakes_a_waiter_on_another() {
    let name = unique_name("wake");
    let a: Arc<dyn Queue> =
        Arc::new(migrated(MemoryQueue::builder().name(&name).connect().await.unwrap()).await);
    let b = MemoryQueue::builder().name(&name).connect().await.unwrap();
    let waiter = {
        let a = a.clone();
        tokio::spawn(async move {
            let t = std::time::Instant::now();
            a.wait_for_work("w", Duration::from_secs(30)).await;
            t.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    b.push(NewJob::new("w", &1).unwrap()).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the waiter was woken")
        .unwrap();
    // Woken by the push (100 ms after the wait began), not by the 30 s timeout.
    assert!(waited < Duration::from_secs(2), "woken after {waited:?}");
    assert_eq!(a.pop(PopRequest::new("w")).await.unwrap().len(), 1);
}
