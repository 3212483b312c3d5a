//! The testing helpers: a worker drained inline runs every due job through its handlers and says
//! what became of each, and the assertions about enqueued jobs find them by queue, kind and
//! args, and say what was there when they fail; on the default backend (SQLite), and on the
//! in-memory one with a manual clock that the test moves past a retry's delay and a schedule's
//! slot.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use dbqueue::memory::MemoryQueue;
use dbqueue::testing::{assert_enqueued, enqueued, refute_enqueued, Enqueued};
use dbqueue::{
    JobArgs, JobError, JobState, KindOptions, ManualClock, NewJob, PeriodicJob, Queue,
    Registration, RetryPolicy, RunOutcome, Worker,
};
use futures::FutureExt as _;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Signup {
    user: u64,
}

impl JobArgs for Signup {
    const KIND: &'static str = "signup";
    fn options() -> KindOptions {
        KindOptions::new().queue("accounts")
    }
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Welcome {
    user: u64,
}

impl JobArgs for Welcome {
    const KIND: &'static str = "welcome";
    fn options() -> KindOptions {
        // A failed mail waits an hour: never due again within a test on the real clock.
        KindOptions::new().queue("mail").retry_policy(RetryPolicy {
            base: Duration::from_secs(3600),
            factor: 2.0,
            max: Duration::from_secs(7200),
            jitter: 0.0,
        })
    }
}

async fn queue() -> (tempfile::TempDir, Arc<dyn Queue>) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("testing.db").display());
    (dir, dbqueue::connect_and_migrate(&url).await.unwrap())
}

/// The application under test: a signup pushes a welcome mail; user 13's mail server refuses
/// for good, user 99's asks to be tried later, user 7's handler panics.
fn worker(queue: &Arc<dyn Queue>) -> Worker {
    let mailer = queue.clone();
    Worker::builder(queue.clone(), "accounts")
        .queue("mail", 1)
        .job(move |s: Signup, _ctx| {
            let mailer = mailer.clone();
            async move {
                let welcome = NewJob::of(&Welcome { user: s.user })?;
                mailer.push(welcome).await?;
                Ok(())
            }
        })
        .job(|w: Welcome, _ctx| async move {
            match w.user {
                13 => Err(JobError::permanent("mailbox does not exist")),
                99 => Err(JobError::retry_after(
                    "greylisted",
                    Duration::from_secs(3600),
                )),
                7 => panic!("template missing"),
                _ => Ok(()),
            }
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_drain_runs_due_jobs_and_the_ones_they_push_and_says_what_became_of_each() {
    let (_dir, queue) = queue().await;
    for user in [1, 13, 99, 7] {
        queue
            .push(NewJob::of(&Signup { user }).unwrap())
            .await
            .unwrap();
    }
    let later = queue
        .push(
            NewJob::of(&Signup { user: 2 })
                .unwrap()
                .delay(Duration::from_secs(3600)),
        )
        .await
        .unwrap();

    let drained = worker(&queue).drain().await.unwrap();
    // Four signups, then the four mails they pushed; not the signup due in an hour.
    assert_eq!(drained.len(), 8, "{drained:#?}");
    assert!(!drained.stopped_at_limit);
    let by_kind = |kind: &str, outcome| {
        drained
            .jobs
            .iter()
            .filter(|j| j.kind.as_deref() == Some(kind) && j.outcome == outcome)
            .count()
    };
    assert_eq!(by_kind("signup", RunOutcome::Completed), 4);
    assert_eq!(by_kind("welcome", RunOutcome::Completed), 1);
    assert_eq!(by_kind("welcome", RunOutcome::Dead), 1);
    assert_eq!(by_kind("welcome", RunOutcome::Retried), 2);
    assert!(drained.runs_of(later).next().is_none());
    // Each run's job as stored after it: the dead one with its error, the panic recorded.
    let after = |outcome| {
        drained
            .jobs
            .iter()
            .filter(|j| j.outcome == outcome && j.kind.as_deref() == Some("welcome"))
            .map(|j| j.after.clone().unwrap())
            .collect::<Vec<_>>()
    };
    let dead = &after(RunOutcome::Dead)[0];
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.last_error.as_deref(), Some("mailbox does not exist"));
    let retried = after(RunOutcome::Retried);
    assert!(retried
        .iter()
        .all(|j| j.state == JobState::Pending && j.attempts == 1));
    assert!(
        retried.iter().any(|j| j
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("template missing"))),
        "{retried:#?}"
    );

    // What is left enqueued: the two mails waiting for their retry, and the later signup.
    let mails = enqueued(&*queue, &Enqueued::of::<Welcome>()).await.unwrap();
    let users: Vec<u64> = mails
        .iter()
        .map(|j| j.payload::<Welcome>().unwrap().user)
        .collect();
    assert_eq!(users, vec![99, 7], "oldest first");
    let job = assert_enqueued(
        &*queue,
        &Enqueued::of::<Welcome>().args(|w: &Welcome| w.user == 99),
    )
    .await;
    assert_eq!(job.attempts, 1);
    assert_enqueued(
        &*queue,
        &Enqueued::queue("accounts").args_eq(&Signup { user: 2 }),
    )
    .await;
    refute_enqueued(
        &*queue,
        &Enqueued::of::<Welcome>().args(|w: &Welcome| w.user == 1),
    )
    .await;
    refute_enqueued(&*queue, &Enqueued::queue("accounts").kind("welcome")).await;

    // Nothing more is due: a second drain runs nothing.
    assert!(worker(&queue).drain().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_drain_stops_at_its_limit_and_respects_a_paused_queue() {
    let (_dir, queue) = queue().await;
    for user in 0..5 {
        queue
            .push(NewJob::of(&Signup { user }).unwrap())
            .await
            .unwrap();
    }
    let drained = worker(&queue).drain_at_most(3).await.unwrap();
    assert_eq!(drained.len(), 3);
    assert!(drained.stopped_at_limit);
    queue.pause("accounts").await.unwrap();
    queue.pause("mail").await.unwrap();
    assert!(worker(&queue).drain().await.unwrap().is_empty());
    queue.resume("accounts").await.unwrap();
    queue.resume("mail").await.unwrap();
    // The three signups left, and four mails (the first signup's ran in the first drain).
    assert_eq!(worker(&queue).drain().await.unwrap().len(), 7);
}

#[tokio::test]
async fn failed_assertions_say_what_was_enqueued() {
    let (_dir, queue) = queue().await;
    queue
        .push(NewJob::of(&Welcome { user: 5 }).unwrap())
        .await
        .unwrap();
    let missing = AssertUnwindSafe(assert_enqueued(
        &*queue,
        &Enqueued::of::<Welcome>().args(|w: &Welcome| w.user == 6),
    ))
    .catch_unwind()
    .await
    .expect_err("no welcome for user 6 was enqueued");
    let message = missing.downcast_ref::<String>().unwrap();
    assert!(
        message.contains(r#"expected a job in queue "mail" of kind "welcome" with args of type"#)
            && message.contains(r#"1 enqueued there:"#)
            && message.contains(r#"kind "welcome" args {"user":5}"#),
        "{message}"
    );
    let present = AssertUnwindSafe(refute_enqueued(&*queue, &Enqueued::of::<Welcome>()))
        .catch_unwind()
        .await
        .expect_err("a welcome was enqueued");
    let message = present.downcast_ref::<String>().unwrap();
    assert!(
        message.contains(
            r#"expected no job in queue "mail" of kind "welcome" to be enqueued; 1 found:"#
        ),
        "{message}"
    );
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Digest {
    day: String,
}

/// The mail worker of a second application: a welcome to user 99 is greylisted at its first
/// attempt (try again in 10 minutes); the nightly digest (pushed by a schedule) always goes out.
fn mailer(queue: &Arc<dyn Queue>) -> Worker {
    Worker::builder(queue.clone(), "mail")
        .job(|w: Welcome, ctx| async move {
            if w.user == 99 && ctx.attempt() == 1 {
                return Err(JobError::retry_after(
                    "greylisted",
                    Duration::from_secs(600),
                ));
            }
            Ok(())
        })
        // Schedules push jobs without a kind: the default handler takes them.
        .handler_fn(|ctx| async move {
            ctx.payload::<Digest>()?;
            Ok(())
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn on_the_in_memory_backend_the_test_moves_time_past_a_retry_and_a_schedule_slot() {
    let start = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap();
    let clock = ManualClock::new(start);
    let queue: Arc<dyn Queue> = Arc::new(
        MemoryQueue::builder()
            .clock(clock.clone())
            .connect()
            .await
            .unwrap(),
    );
    queue.migrate().await.unwrap();
    let nightly = PeriodicJob::new(
        "nightly-digest",
        "0 3 * * *",
        "mail",
        &Digest {
            day: "today".into(),
        },
    )
    .unwrap();
    queue
        .schedule_register(&nightly, Registration::Operator, clock.get())
        .await
        .unwrap();

    // The code under test pushes a welcome; the first attempt is greylisted.
    let id = queue
        .push(NewJob::of(&Welcome { user: 99 }).unwrap())
        .await
        .unwrap();
    assert_enqueued(
        &*queue,
        &Enqueued::of::<Welcome>().args_eq(&Welcome { user: 99 }),
    )
    .await;
    let worker = mailer(&queue);
    let first = worker.drain().await.unwrap();
    assert_eq!(first.count(RunOutcome::Retried), 1, "{first:#?}");
    let after = first.jobs[0].after.as_ref().unwrap();
    assert_eq!(after.run_at, start + chrono::Duration::seconds(600));
    // Not due yet, however often the test drains: the clock has not moved.
    assert!(worker.drain().await.unwrap().is_empty());
    clock.advance(Duration::from_secs(599));
    assert!(worker.drain().await.unwrap().is_empty());
    clock.advance(Duration::from_secs(1));
    let second = worker.drain().await.unwrap();
    assert_eq!(second.count(RunOutcome::Completed), 1, "{second:#?}");
    assert_eq!(second.jobs[0].id, id);
    assert_eq!(second.jobs[0].attempt, 2);
    refute_enqueued(&*queue, &Enqueued::of::<Welcome>()).await;

    // The schedule's first slot is 03:00: nothing fires before it, one job at it.
    let early = queue.schedule_tick(clock.get()).await.unwrap();
    assert!(early.enqueued.is_empty(), "{early:?}");
    let digest = Enqueued::queue("mail").args(|d: &Digest| d.day == "today");
    refute_enqueued(&*queue, &digest).await;
    clock.set(start + chrono::Duration::hours(3));
    let tick = queue.schedule_tick(clock.get()).await.unwrap();
    assert_eq!(tick.enqueued.len(), 1, "{tick:?}");
    assert_eq!(tick.enqueued[0].1, start + chrono::Duration::hours(3));
    assert_enqueued(&*queue, &digest).await;
    let nightly_run = worker.drain().await.unwrap();
    assert_eq!(
        nightly_run.count(RunOutcome::Completed),
        1,
        "{nightly_run:#?}"
    );
    assert_eq!(nightly_run.jobs[0].id, tick.enqueued[0].2);
    refute_enqueued(&*queue, &digest).await;
}
