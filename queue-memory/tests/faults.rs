//! The faults a test injects into a queue value's statements (`MemoryQueue::faults`), and the
//! counts of the statements it ran, through the `Queue` API the engine serves above them.

use std::time::Duration;

use dbqueue_memory::{MemoryQueue, Statement, Statements, Times};
use queue_core::{Error, JobState, NewJob, PopRequest, Queue};

/// A private store on Tokio's clock, migrated.
async fn queue() -> MemoryQueue {
    let q = MemoryQueue::builder()
        .tokio_clock()
        .connect()
        .await
        .unwrap();
    q.migrate().await.unwrap();
    q
}

/// Two queue values on one new named store, migrated.
async fn two_on_one_store() -> (MemoryQueue, MemoryQueue) {
    let name = format!("faults-test-{}", uuid::Uuid::new_v4());
    let a = MemoryQueue::builder().name(&name).connect().await.unwrap();
    a.migrate().await.unwrap();
    let b = MemoryQueue::builder().name(&name).connect().await.unwrap();
    (a, b)
}

fn job() -> NewJob {
    NewJob::new("q", &1).unwrap()
}

#[tokio::test]
async fn while_the_database_is_down_every_statement_is_unavailable_and_changes_nothing() {
    let (q, other) = two_on_one_store().await;
    let id = q.push(job()).await.unwrap();
    let faults = q.faults();
    faults.down();
    assert!(faults.is_down());
    for result in [
        q.push(job()).await.map(|_| ()),
        q.pop(PopRequest::new("q")).await.map(|_| ()),
        q.get(id).await.map(|_| ()),
        q.stats(None).await.map(|_| ()),
        q.now().await.map(|_| ()),
    ] {
        let e = result.unwrap_err();
        assert!(e.is_transient(), "{e:?}");
        assert!(matches!(e, Error::Unavailable { .. }), "{e:?}");
    }
    // Another queue value on the store (another process) is not cut off, and sees that
    // nothing changed: one job, still pending.
    let stats = other.stats(Some("q")).await.unwrap();
    assert_eq!((stats[0].available, stats[0].running), (1, 0));
    faults.up();
    assert!(!faults.is_down());
    let got = q.pop(PopRequest::new("q")).await.unwrap();
    assert_eq!(got[0].job.id, id);
}

#[tokio::test]
async fn a_fault_strikes_the_next_statements_of_its_set_then_is_spent() {
    let q = queue().await;
    let faults = q.faults();
    q.push(job()).await.unwrap();
    faults.unavailable(Statement::JobClaim, Times::Next(2));
    for _ in 0..2 {
        let e = q.pop(PopRequest::new("q")).await.unwrap_err();
        assert!(matches!(e, Error::Unavailable { .. }), "{e:?}");
    }
    // Other statements were never struck, and the third claim is not either.
    assert_eq!(q.stats(None).await.unwrap()[0].available, 1);
    assert_eq!(q.pop(PopRequest::new("q")).await.unwrap().len(), 1);
    assert_eq!(faults.calls(Statement::JobClaim), 3);
}

#[tokio::test]
async fn a_permanent_error_is_a_database_error_that_is_not_transient() {
    let q = queue().await;
    let faults = q.faults();
    faults.error(Statement::JobInsert, Times::UntilCleared);
    for _ in 0..3 {
        let e = q.push(job()).await.unwrap_err();
        assert!(matches!(e, Error::Database { .. }), "{e:?}");
        assert!(!e.is_transient());
        assert!(e.to_string().contains("job_insert"), "{e}");
    }
    faults.clear();
    let id = q.push(job()).await.unwrap();
    assert_eq!(q.get(id).await.unwrap().unwrap().state, JobState::Pending);
    assert_eq!(faults.calls(Statement::JobInsert), 4);
}

#[tokio::test]
async fn the_first_fault_injected_strikes_first() {
    let q = queue().await;
    let faults = q.faults();
    faults.error(Statement::JobGet, Times::Next(1));
    faults.unavailable(Statements::ALL, Times::Next(1));
    let refused = q.push(job()).await.unwrap_err();
    // The push met the second fault (the first is not for it), which is spent now.
    assert!(matches!(refused, Error::Unavailable { .. }), "{refused:?}");
    let id = q.push(job()).await.unwrap();
    assert!(matches!(q.get(id).await, Err(Error::Database { .. })));
    assert!(q.get(id).await.unwrap().is_some());
}

#[tokio::test]
async fn an_injected_panic_unwinds_into_the_caller_and_leaves_the_store_usable() {
    let q = queue().await;
    let faults = q.faults();
    let id = q.push(job()).await.unwrap();
    faults.panic(Statement::JobClaim, Times::Next(1));
    let claimer = q.clone();
    let joined = tokio::spawn(async move { claimer.pop(PopRequest::new("q")).await }).await;
    assert!(joined.unwrap_err().is_panic());
    assert_eq!(faults.running(Statement::JobClaim), 0, "no longer running");
    // Nothing was claimed, and the store's lock was not left held.
    assert_eq!(q.get(id).await.unwrap().unwrap().state, JobState::Pending);
    assert_eq!(q.pop(PopRequest::new("q")).await.unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn latency_delays_each_statement_of_its_set_and_a_dropped_one_does_nothing() {
    let q = queue().await;
    let faults = q.faults();
    let id = q.push(job()).await.unwrap();
    faults.latency(Statement::JobClaim, Duration::from_millis(300));
    faults.latency(
        Statement::JobClaim | Statement::JobGet,
        Duration::from_millis(200),
    );
    // Dropped while it waits: nothing claimed.
    let cut = tokio::time::timeout(Duration::from_millis(400), q.pop(PopRequest::new("q"))).await;
    assert!(cut.is_err());
    assert_eq!(faults.running(Statement::JobClaim), 0);
    let started = tokio::time::Instant::now();
    assert_eq!(q.get(id).await.unwrap().unwrap().state, JobState::Pending);
    assert_eq!(started.elapsed(), Duration::from_millis(200));
    let started = tokio::time::Instant::now();
    assert_eq!(q.pop(PopRequest::new("q")).await.unwrap().len(), 1);
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(500),
        "latencies add up"
    );
    faults.clear();
    let started = tokio::time::Instant::now();
    q.get(id).await.unwrap();
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_statement_waiting_out_its_latency_meets_the_faults_in_force_when_it_runs() {
    let q = queue().await;
    let faults = q.faults();
    q.push(job()).await.unwrap();
    faults.latency(Statement::JobClaim, Duration::from_secs(1));
    let claimer = q.clone();
    let pop = tokio::spawn(async move { claimer.pop(PopRequest::new("q")).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    faults.down();
    let e = pop.await.unwrap().unwrap_err();
    assert!(e.is_transient(), "{e:?}");
}

#[tokio::test(start_paused = true)]
async fn tallies_count_a_set_of_statements_and_the_most_that_ran_at_once() {
    let q = queue().await;
    let faults = q.faults();
    q.push_batch((0..3).map(|_| job()).collect()).await.unwrap();
    let claims = faults.tally(Statement::JobClaim | Statement::JobCompleteAndClaim);
    faults.latency(Statement::JobClaim, Duration::from_millis(10));
    let pops: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.pop(PopRequest::new("q")).await.unwrap() })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(claims.running(), 3);
    assert_eq!(faults.running(Statement::JobClaim), 3);
    for pop in pops {
        assert_eq!(pop.await.unwrap().len(), 1);
    }
    let popped = q.pop(PopRequest::new("q")).await.unwrap();
    assert!(popped.is_empty());
    assert_eq!((claims.calls(), claims.running()), (4, 0));
    assert_eq!(claims.most_at_once(), 3);
    // A claim that finds nothing looks at the queue's controls, a statement of its own; with
    // the insert of the jobs, that is every statement this queue value ran.
    assert_eq!(faults.calls(Statement::QueueControlGet), 1);
    assert_eq!(faults.calls(Statement::JobInsert), 1);
    assert_eq!(faults.calls(Statements::ALL), 6);
}

#[tokio::test]
async fn counts_start_with_the_first_handle_and_clones_share_it() {
    let q = queue().await;
    q.push(job()).await.unwrap();
    let faults = q.faults();
    assert_eq!(faults.calls(Statements::ALL), 0, "nothing counted before");
    q.clone().push(job()).await.unwrap();
    let again = q.clone().faults();
    assert_eq!(again.calls(Statement::JobInsert), 1);
    again.down();
    assert!(faults.is_down());
}

#[tokio::test(start_paused = true)]
async fn the_wait_for_work_is_counted_and_panicked_but_never_fails() {
    let q = queue().await;
    let faults = q.faults();
    faults.down();
    faults.unavailable(Statement::Watch, Times::UntilCleared);
    // The wait returns at its timeout: an outage and errors do not apply to it.
    q.wait_for_work("q", Duration::from_millis(10)).await;
    assert_eq!(faults.calls(Statement::Watch), 1);
    faults.panic(Statement::Watch, Times::Next(1));
    let waiter = q.clone();
    let joined =
        tokio::spawn(async move { waiter.wait_for_work("q", Duration::from_millis(10)).await })
            .await;
    assert!(joined.unwrap_err().is_panic());
    q.wait_for_work("q", Duration::from_millis(10)).await;
    assert_eq!(faults.calls(Statement::Watch), 3);
}

#[test]
fn statements_are_named_as_in_the_catalogue() {
    for s in Statement::ALL {
        assert!(
            queue_core::engine::statements::CATALOGUE.contains(&s.name())
                || [
                    "migration_apply",
                    "watch",
                    "tx_begin",
                    "tx_commit",
                    "tx_rollback",
                    "savepoint",
                    "savepoint_release",
                    "savepoint_rollback"
                ]
                .contains(&s.name())
                || queue_core::engine::statements::CATALOGUE
                    .iter()
                    .any(|c| s.name().strip_prefix(c) == Some("_in")),
            "{s} is neither a statement of the catalogue nor a driver call"
        );
    }
    let set = Statement::JobClaim | Statement::JobGet;
    assert!(set.contains(Statement::JobGet) && !set.contains(Statement::JobList));
    assert_eq!(format!("{set:?}"), r#"{"job_claim", "job_get"}"#);
    assert_eq!(format!("{:?}", Statements::ALL), "ALL");
    assert_eq!(Statements::ALL.iter().count(), Statement::ALL.len());
    assert_eq!(Statements::NONE.iter().count(), 0);
}
