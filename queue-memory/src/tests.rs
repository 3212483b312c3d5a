//! Tests of what only the crate can see: every index against the rows after any sequence of
//! operations, and rollbacks that return the whole store to where it was.

use std::time::Duration;

use chrono::{TimeZone, Utc};
use queue_core::engine::{
    Claim, Controls, JobClaim, JobInsert, KeyRateRecord, Lifecycle, Push, RateRecord,
    ScheduleAdvance, Schedules, StoredSchedule, Target,
};
use queue_core::{
    Backend, BulkAction, Error, Failure, JobFilter, JobId, Lease, ManualClock, NewJob, PopRequest,
    PruneRequest, Queue, Reschedule, Snooze, Unique,
};

use crate::MemoryQueue;

async fn queue(clock: &std::sync::Arc<ManualClock>) -> MemoryQueue {
    let q = MemoryQueue::builder()
        .clock(clock.clone())
        .connect()
        .await
        .unwrap();
    q.migrate().await.unwrap();
    q
}

fn start() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2030, 1, 2, 3, 4, 5).unwrap()
}

/// A random job of queue `a` or `b`: any priority of five, due now or within 5 s, with or
/// without a dedup key, a concurrency key and a unique rule, each from a small set so that
/// they clash.
fn random_job() -> NewJob {
    let queue = ["a", "b"][fastrand::usize(..2)];
    let mut job = NewJob::new(queue, &fastrand::u8(..8))
        .unwrap()
        .priority(fastrand::i32(-2..=2))
        .max_attempts(fastrand::u32(1..=3));
    if fastrand::bool() {
        job = job.delay(Duration::from_millis(fastrand::u64(..5_000)));
    }
    if fastrand::u8(..4) == 0 {
        job = job.dedup_key(format!("d{}", fastrand::u8(..3)));
    }
    if fastrand::bool() {
        job = job.concurrency_key(format!("k{}", fastrand::u8(..3)));
    }
    if fastrand::u8(..5) == 0 {
        job = job.kind("uniq").unique(Unique::new().by_args());
    }
    job
}

/// Every kind of operation, at random, on two queues (one of them keyed, so that its claims
/// take the engine's controlled path), with the clock moving: after each, every index must
/// hold exactly what the rows say, and nothing may fail as a database error.
#[tokio::test]
async fn random_operations_keep_every_index_whole() {
    for seed in 0..4 {
        fastrand::seed(seed);
        let clock = ManualClock::new(start());
        let q = queue(&clock).await;
        q.set_key_limit("b", Some(2)).await.unwrap();
        let mut leases: Vec<Lease> = Vec::new();
        let mut ids: Vec<JobId> = Vec::new();
        let (mut claimed, mut rescued) = (0, 0);
        for step in 0..1_000 {
            // A holder acts on its lease only now and then, so that some leases expire.
            let pick = |leases: &mut Vec<Lease>| {
                (!leases.is_empty() && fastrand::bool())
                    .then(|| leases.swap_remove(fastrand::usize(..leases.len())))
            };
            let id = ids.get(fastrand::usize(..ids.len().max(1))).copied();
            let outcome: queue_core::Result<()> = match fastrand::u8(..24) {
                0..=3 => q.push(random_job()).await.map(|id| ids.push(id)),
                4 => q
                    .push_batch((0..fastrand::usize(1..5)).map(|_| random_job()).collect())
                    .await
                    .map(|new| ids.extend(new)),
                5..=7 => {
                    let queue = ["a", "b"][fastrand::usize(..2)];
                    let lease = Duration::from_millis(fastrand::u64(500..5_000));
                    let req = PopRequest::new(queue)
                        .limit(fastrand::usize(1..5))
                        .lease(lease);
                    q.pop(req).await.map(|got| {
                        claimed += got.len();
                        leases.extend(got.into_iter().map(|l| l.lease));
                    })
                }
                8 => match pick(&mut leases) {
                    Some(l) => q.ack(&l).await,
                    None => Ok(()),
                },
                9 => {
                    let n = fastrand::usize(..=leases.len().min(3));
                    let batch: Vec<Lease> = (0..n).filter_map(|_| pick(&mut leases)).collect();
                    q.ack_batch(&batch).await.map(drop)
                }
                10 => match pick(&mut leases) {
                    Some(l) if fastrand::bool() => {
                        q.fail(&l, Failure::retryable("boom")).await.map(drop)
                    }
                    Some(l) => q.fail(&l, Failure::permanent("no")).await.map(drop),
                    None => Ok(()),
                },
                11 => match pick(&mut leases) {
                    Some(l) => q.release(&l).await,
                    None => Ok(()),
                },
                12 => match pick(&mut leases) {
                    Some(l) => {
                        let snooze = Snooze::new(Duration::from_secs(1)).max_snoozes(2);
                        q.snooze(&l, snooze).await.map(drop)
                    }
                    None => Ok(()),
                },
                13 => match leases.first().cloned() {
                    Some(l) => q.extend(&l, Duration::from_secs(3)).await.map(|new| {
                        leases[0] = new;
                    }),
                    None => Ok(()),
                },
                14 => match id {
                    Some(id) if fastrand::bool() => q.cancel(id).await,
                    Some(id) => q.retry(id).await,
                    None => Ok(()),
                },
                15 | 16 => q.rescue_expired().await.map(|n| rescued += n),
                17 => match id {
                    Some(id) => {
                        let change = Reschedule::new()
                            .delay(Duration::from_millis(fastrand::u64(..3_000)))
                            .priority(fastrand::i32(-2..=2));
                        q.reschedule(id, change).await
                    }
                    None => Ok(()),
                },
                18 => q
                    .prune(PruneRequest::older_than(Duration::from_secs(2)))
                    .await
                    .map(drop),
                19 => {
                    let action = [BulkAction::Cancel, BulkAction::Retry, BulkAction::Delete]
                        [fastrand::usize(..3)];
                    let filter = JobFilter {
                        queue: Some(["a", "b"][fastrand::usize(..2)].to_owned()),
                        ..JobFilter::default()
                    };
                    q.bulk(action, &filter).await.map(drop)
                }
                _ => {
                    clock.advance(Duration::from_millis(fastrand::u64(..3_000)));
                    Ok(())
                }
            };
            if let Err(e @ (Error::Database { .. } | Error::Unavailable { .. })) = &outcome {
                panic!("seed {seed}, step {step}: {e:?}");
            }
            let (_, check) = q.engine().driver().inspect().await;
            if let Err(e) = check {
                panic!("seed {seed}, step {step}: {e}");
            }
        }
        assert!(
            claimed > 100 && rescued > 0,
            "seed {seed}: the operations reached too little ({claimed} claimed, {rescued} rescued)"
        );
    }
}

/// A transaction that inserted, claimed, controlled, counted and advanced a schedule, then
/// rolled back, leaves the store exactly as it was; one dropped without a commit too; and a
/// statement refused inside a transaction undoes only its own writes.
#[tokio::test]
async fn a_rollback_restores_exactly_what_was_there() {
    let clock = ManualClock::new(start());
    let q = queue(&clock).await;
    let d = q.engine().driver();
    // Something to change: jobs in every state but dead, a control row, a schedule.
    q.push_batch((0..5).map(|i| NewJob::new("r", &i).unwrap()).collect())
        .await
        .unwrap();
    let running = q.pop(PopRequest::new("r").limit(2)).await.unwrap();
    q.ack(&running[0].lease).await.unwrap();
    let kept = q
        .push(NewJob::new("r", &1).unwrap().dedup_key("x"))
        .await
        .unwrap();
    q.set_concurrency_limit("r", Some(10)).await.unwrap();
    let schedule = StoredSchedule {
        name: "nightly".into(),
        expression: "0 0 * * *".into(),
        time_zone: "UTC".into(),
        queue: "r".into(),
        kind: Some("nightly.report".into()),
        payload: "{}".into(),
        priority: 0,
        max_attempts: 3,
        misfire: "skip".into(),
        misfire_max: 1,
        origin: "operator".into(),
        since: start(),
        last_slot: None,
        last_job: None,
        expires_at: None,
        version: 1,
        created_at: start(),
        updated_at: start(),
        last_job_state: None,
    };
    d.schedule_insert(&schedule).await.unwrap();
    let (before, check) = d.inspect().await;
    check.unwrap();

    let mut tx = d.tx_begin().await.unwrap();
    let jobs: Vec<NewJob> = (0..3).map(|i| NewJob::new("r", &i).unwrap()).collect();
    let delays = [Duration::ZERO; 3];
    let insert = JobInsert {
        jobs: &jobs,
        delays: &delays,
        notify: &[],
    };
    d.job_insert(Target::Tx(&mut tx), insert).await.unwrap();
    let claim = JobClaim {
        queue: "r",
        limit: 4,
        lease: Duration::from_secs(30),
        worker: "w",
        controls_checked: true,
        after: None,
    };
    assert_eq!(d.job_claim_in(&mut tx, claim).await.unwrap().len(), 4);
    d.queue_rate_record(
        &mut tx,
        RateRecord {
            queue: "r",
            window: 7,
            count: 3,
        },
    )
    .await
    .unwrap();
    d.queue_key_rate_put(
        &mut tx,
        KeyRateRecord {
            queue: "r",
            key: "k",
            window: 7,
            count: 1,
        },
    )
    .await
    .unwrap();
    d.queue_key_cursor(&mut tx, "r", Some("k")).await.unwrap();
    let advance = ScheduleAdvance {
        name: "nightly",
        version: 1,
        last_slot: start(),
        last_job: kept,
        now: start(),
    };
    assert_eq!(
        d.schedule_advance(Target::Tx(&mut tx), advance)
            .await
            .unwrap(),
        1
    );
    d.tx_rollback(tx).await.unwrap();
    let (after, check) = d.inspect().await;
    check.unwrap();
    assert_eq!(before, after, "a rollback restores everything");

    // Dropped without a commit: the same.
    let mut tx = d.tx_begin().await.unwrap();
    d.job_insert(Target::Tx(&mut tx), insert).await.unwrap();
    drop(tx);
    assert_eq!(
        d.inspect().await.0,
        before,
        "a dropped transaction rolls back"
    );

    // A statement refused inside a transaction: its own writes are undone (the first job of
    // the batch), the earlier statement's stay until the commit.
    let mut tx = d.tx_begin().await.unwrap();
    let first = [NewJob::new("r", &"first").unwrap()];
    let p = JobInsert {
        jobs: &first,
        delays: &[Duration::ZERO],
        notify: &[],
    };
    d.job_insert(Target::Tx(&mut tx), p).await.unwrap();
    let clash = [
        NewJob::new("r", &"fresh").unwrap(),
        NewJob::new("r", &"clash").unwrap().dedup_key("x"),
    ];
    let p = JobInsert {
        jobs: &clash,
        delays: &[Duration::ZERO; 2],
        notify: &[],
    };
    let refused = d.job_insert(Target::Tx(&mut tx), p).await.unwrap_err();
    assert!(
        matches!(refused, crate::MemoryError::DedupKeyHeld { .. }),
        "{refused:?}"
    );
    d.tx_commit(tx).await.unwrap();
    assert!(q.get(first[0].id()).await.unwrap().is_some());
    assert!(q.get(clash[0].id()).await.unwrap().is_none());
    d.inspect().await.1.unwrap();
}

/// Inside a transaction, a rollback to a savepoint undoes what ran since it was set (so does
/// dropping it) and keeps what ran before; a released one keeps what ran since, until the
/// transaction ends.
#[tokio::test]
async fn a_savepoint_undoes_only_what_ran_after_it() {
    let clock = ManualClock::new(start());
    let q = queue(&clock).await;
    let d = q.engine().driver();
    let one = |payload: &str| [NewJob::new("s", &payload).unwrap()];
    let insert = |jobs| JobInsert {
        jobs,
        delays: &[Duration::ZERO],
        notify: &[],
    };
    let (before, undone, dropped, kept) =
        (one("before"), one("undone"), one("dropped"), one("kept"));
    let mut tx = d.tx_begin().await.unwrap();
    d.job_insert(Target::Tx(&mut tx), insert(&before))
        .await
        .unwrap();
    let mut savepoint = d.savepoint(&mut tx).await.unwrap();
    d.job_insert(Target::Tx(&mut *savepoint), insert(&undone))
        .await
        .unwrap();
    d.savepoint_rollback(savepoint).await.unwrap();
    let mut savepoint = d.savepoint(&mut tx).await.unwrap();
    d.job_insert(Target::Tx(&mut *savepoint), insert(&dropped))
        .await
        .unwrap();
    drop(savepoint);
    let mut savepoint = d.savepoint(&mut tx).await.unwrap();
    d.job_insert(Target::Tx(&mut *savepoint), insert(&kept))
        .await
        .unwrap();
    d.savepoint_release(savepoint).await.unwrap();
    d.tx_commit(tx).await.unwrap();
    for (jobs, stored) in [
        (before, true),
        (undone, false),
        (dropped, false),
        (kept, true),
    ] {
        let found = q.get(jobs[0].id()).await.unwrap();
        assert_eq!(found.is_some(), stored, "{:?}", jobs[0].payload_json());
    }
    d.inspect().await.1.unwrap();
}

/// A migration that fails leaves nothing behind, and a store that was never migrated refuses
/// every statement, naming the way out.
#[tokio::test]
async fn an_unmigrated_store_refuses_statements() {
    let q = MemoryQueue::builder().connect().await.unwrap();
    let e = q.push(NewJob::new("q", &1).unwrap()).await.unwrap_err();
    assert!(
        matches!(&e, Error::Database { .. }) && e.to_string().contains("migrate"),
        "{e:?}"
    );
    let d = q.engine().driver();
    let mut m = d.migration_lock().await.unwrap();
    let bogus = queue_core::engine::Migration {
        version: 99,
        name: "bogus",
        sql: "",
    };
    d.migration_apply(&mut m, &d.migrations()[0]).await.unwrap();
    assert!(d.migration_apply(&mut m, &bogus).await.is_err());
    d.migration_unlock(m, false).await.unwrap();
    assert_eq!(
        d.inspect().await.0,
        "migrations {} schema None",
        "the failed run changed nothing"
    );
    q.migrate().await.unwrap();
    q.migrate().await.unwrap();
    q.push(NewJob::new("q", &1).unwrap()).await.unwrap();
}
