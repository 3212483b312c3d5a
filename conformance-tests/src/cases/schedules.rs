//! Periodic jobs: each slot enqueued exactly once however many schedulers run, misfire
//! policies, removal and changes of schedules, and bad input. Slots are counted in the jobs
//! table (a slot's job carries the dedup key `schedule:<name>@<slot>`). Schedulers decide slots
//! by a [`ManualClock`] set an hour in the past, so their jobs are due at once and a case covers
//! dozens of slots without waiting for them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use queue_core::periodic::{
    ManualClock, Misfire, Origin, PeriodicJob, Registered, Registration, ScheduleInfo, Scheduler,
    SchedulerHandle,
};
use queue_core::{Error, JobContext, JobError, JobState, ListRequest, Queue};
use serde_json::json;

use super::{invalid_field, pop_one};
use crate::Ctx;

/// Slots every concurrency case runs through.
const SLOTS: i64 = 25;
/// A lease long enough never to end within a case.
const LONG: Registration = Registration::Code {
    lease: Duration::from_secs(3600),
};
/// How long a case waits for a scheduler to finish a tick.
const TICK_TIMEOUT: Duration = Duration::from_secs(60);

/// A whole minute an hour before now: slots from there on are in the past for every clock
/// involved, so their jobs are due at once.
fn start() -> DateTime<Utc> {
    (Utc::now() - TimeDelta::hours(1))
        .duration_trunc(TimeDelta::minutes(1))
        .expect("a minute divides the day")
}

fn secs(n: i64) -> TimeDelta {
    TimeDelta::seconds(n)
}

/// How many jobs the jobs table holds for each slot key of `queue`.
async fn jobs_per_key(q: &Arc<dyn Queue>, queue: &str) -> anyhow::Result<BTreeMap<String, usize>> {
    let jobs = q
        .list(ListRequest {
            queue: Some(queue.to_owned()),
            state: None,
            limit: 1000,
            before: None,
            kind: None,
        })
        .await?;
    let mut counts = BTreeMap::new();
    for j in jobs {
        let key = j
            .dedup_key
            .clone()
            .with_context(|| format!("job {} of {queue} has no slot key", j.id))?;
        *counts.entry(key).or_insert(0) += 1;
    }
    Ok(counts)
}

/// Fails unless `queue` holds exactly one job for each of `slots` of `job`, and no other.
async fn expect_slots(
    q: &Arc<dyn Queue>,
    job: &PeriodicJob,
    slots: &[DateTime<Utc>],
) -> anyhow::Result<()> {
    let got = jobs_per_key(q, job.queue()).await?;
    let want: BTreeMap<String, usize> = slots.iter().map(|s| (job.dedup_key_for(*s), 1)).collect();
    if got != want {
        let extra: Vec<_> = got
            .iter()
            .filter(|(k, n)| want.get(*k) != Some(n))
            .collect();
        let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).collect();
        bail!(
            "jobs per slot in {}: {} slots stored, {} expected; wrong counts {extra:?}; missing {missing:?}",
            job.queue(),
            got.len(),
            want.len()
        );
    }
    Ok(())
}

async fn stored(q: &Arc<dyn Queue>, name: &str) -> anyhow::Result<ScheduleInfo> {
    q.schedules()
        .await?
        .into_iter()
        .find(|s| s.job.name() == name)
        .with_context(|| format!("schedule {name} is not stored"))
}

async fn wait_ticked(handles: &[SchedulerHandle], at: DateTime<Utc>) -> anyhow::Result<()> {
    for (i, h) in handles.iter().enumerate() {
        tokio::time::timeout(TICK_TIMEOUT, h.ticked(at))
            .await
            .with_context(|| {
                format!(
                    "scheduler {i} did not tick at {at} (progress {:?})",
                    h.progress()
                )
            })?;
        ensure!(!h.is_finished(), "scheduler {i} stopped");
    }
    Ok(())
}

/// `n` schedulers, each on its own queue value (its own pool, as in separate processes), all
/// registering the same every-second schedule, run concurrently over [`SLOTS`] slots: the
/// clock moves one slot at a time and every scheduler ticks at it; the jobs table then holds
/// exactly one job per slot.
async fn one_job_per_slot(ctx: Ctx, n: usize) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let t0 = start();
    let clock = ManualClock::new(t0);
    let job = PeriodicJob::new("every-second", "* * * * * *", "ticks", &json!({"n": n}))?;
    let mut handles = Vec::with_capacity(n);
    for _ in 0..n {
        let qv = fx.another().await?;
        let scheduler = Scheduler::builder(qv)
            .schedule(job.clone())
            .clock(clock.clone())
            .build()?;
        handles.push(scheduler.start());
    }
    wait_ticked(&handles, t0).await?;
    let mut slots = Vec::new();
    for i in 1..=SLOTS {
        let t = t0 + secs(i);
        clock.set(t);
        wait_ticked(&handles, t).await?;
        slots.push(t);
    }
    let progress: Vec<_> = handles.iter().map(SchedulerHandle::progress).collect();
    for h in handles {
        h.shutdown().await;
    }
    expect_slots(&q, &job, &slots).await?;
    let enqueued: u64 = progress.iter().map(|p| p.enqueued).sum();
    ensure!(
        enqueued == SLOTS as u64,
        "the schedulers report {enqueued} slots enqueued, the table holds {SLOTS}: {progress:?}"
    );
    let info = stored(&q, "every-second").await?;
    ensure!(info.last_slot == Some(t0 + secs(SLOTS)), "{info:?}");
    ensure!(info.origin == Origin::Code);
    Ok(())
}

/// Two schedulers over 25 slots: one job per slot.
pub async fn schedules_two_schedulers_one_job_per_slot(ctx: Ctx) -> anyhow::Result<()> {
    one_job_per_slot(ctx, 2).await
}

/// Eight schedulers over 25 slots: one job per slot.
pub async fn schedules_eight_schedulers_one_job_per_slot(ctx: Ctx) -> anyhow::Result<()> {
    one_job_per_slot(ctx, 8).await
}

/// Eight queue values call `schedule_tick` at the same instant, many times over, with three
/// schedules due at once: every slot of every schedule is enqueued exactly once, and each
/// concurrent round enqueues each slot through exactly one caller.
pub async fn schedules_concurrent_ticks_enqueue_once(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let t0 = start();
    let jobs = [
        PeriodicJob::new("a", "* * * * * *", "ta", &1)?,
        PeriodicJob::new("b", "*/2 * * * * *", "tb", &2)?,
        PeriodicJob::new("c", "* * * * * *", "tc", &3)?.misfire(Misfire::CatchUp { max: 3 }),
    ];
    for job in &jobs {
        q.schedule_register(job, Registration::Operator, t0).await?;
    }
    let mut values = Vec::new();
    for _ in 0..8 {
        values.push(fx.another().await?);
    }
    for round in 1..=10 {
        let now = t0 + secs(2 * round);
        let barrier = Arc::new(tokio::sync::Barrier::new(values.len()));
        let mut tasks = Vec::new();
        for v in &values {
            let v = v.clone();
            let barrier = barrier.clone();
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                v.schedule_tick(now).await
            }));
        }
        let mut per_slot: BTreeMap<(String, DateTime<Utc>), usize> = BTreeMap::new();
        for t in tasks {
            let report = t.await??;
            ensure!(report.failed.is_empty(), "{:?}", report.failed);
            for (name, slot, _) in report.enqueued {
                *per_slot.entry((name, slot)).or_insert(0) += 1;
            }
        }
        ensure!(
            per_slot.values().all(|n| *n == 1),
            "round {round}: a slot enqueued by several callers: {per_slot:?}"
        );
    }
    // a and b: skip, so each round (two seconds) enqueues only the latest due slot.
    let evens: Vec<_> = (1..=10).map(|r| t0 + secs(2 * r)).collect();
    expect_slots(&q, &jobs[0], &evens).await?;
    expect_slots(&q, &jobs[1], &evens).await?;
    // c catches up both seconds of each round.
    let every: Vec<_> = (1..=20).map(|s| t0 + secs(s)).collect();
    expect_slots(&q, &jobs[2], &every).await?;
    Ok(())
}

/// Misfire `skip`: after an outage across 25 slots, one tick enqueues only the latest missed
/// slot; the next slot is enqueued as usual. The listing shows the last slot and, once its job
/// is done, that it succeeded.
pub async fn schedules_misfire_skip_enqueues_only_the_latest(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let t0 = start();
    let clock = ManualClock::new(t0);
    let job = PeriodicJob::new("skipper", "*/10 * * * * *", "skip", &json!({}))?;
    let scheduler = Scheduler::builder(q.clone())
        .schedule(job.clone())
        .clock(clock.clone())
        .build()?;
    scheduler.register().await?;
    // Nobody ticks while 25 slots pass.
    clock.set(t0 + secs(255));
    let report = scheduler.tick().await?;
    ensure!(report.enqueued.len() == 1, "{report:?}");
    expect_slots(&q, &job, &[t0 + secs(250)]).await?;
    let info = stored(&q, "skipper").await?;
    ensure!(info.last_slot == Some(t0 + secs(250)), "{info:?}");
    ensure!(info.last_job_state == Some(JobState::Pending), "{info:?}");
    ensure!(info.next_slot(t0 + secs(255))? == Some(t0 + secs(260)));
    // The job runs and succeeds: the listing says so.
    let leased = pop_one(&q, "skip").await?;
    q.ack(&leased.lease).await?;
    let info = stored(&q, "skipper").await?;
    ensure!(info.last_job == Some(leased.job.id), "{info:?}");
    ensure!(info.last_job_state == Some(JobState::Completed), "{info:?}");
    // A tick at the same time again changes nothing; the next slot is enqueued.
    ensure!(scheduler.tick().await?.enqueued.is_empty());
    clock.set(t0 + secs(261));
    ensure!(scheduler.tick().await?.enqueued.len() == 1);
    expect_slots(&q, &job, &[t0 + secs(250), t0 + secs(260)]).await?;
    Ok(())
}

/// Misfire `catch_up` with a bound of 5: after an outage across 25 slots, one tick enqueues the
/// latest 5 missed slots, no more; a second tick at the same time enqueues nothing.
pub async fn schedules_misfire_catch_up_is_bounded(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let t0 = start();
    let job = PeriodicJob::new("catcher", "*/10 * * * * *", "catch", &json!({}))?
        .misfire(Misfire::CatchUp { max: 5 });
    ensure!(q.schedule_register(&job, LONG, t0).await? == Registered::Created);
    let report = q.schedule_tick(t0 + secs(255)).await?;
    ensure!(report.enqueued.len() == 5, "{report:?}");
    let latest: Vec<_> = (21..=25).map(|i| t0 + secs(10 * i)).collect();
    expect_slots(&q, &job, &latest).await?;
    ensure!(q.schedule_tick(t0 + secs(255)).await?.enqueued.is_empty());
    let info = stored(&q, "catcher").await?;
    ensure!(info.last_slot == Some(t0 + secs(250)), "{info:?}");
    // Two more slots pass: both are caught up (within the bound).
    q.schedule_tick(t0 + secs(275)).await?;
    let mut all = latest;
    all.extend([t0 + secs(260), t0 + secs(270)]);
    expect_slots(&q, &job, &all).await?;
    Ok(())
}

/// Removal: an operator's schedule removed with `schedule_remove` stops firing at once; a code
/// schedule whose process stopped renewing it stops when its lease ends (and an operator cannot
/// remove it while the lease runs).
pub async fn schedules_removed_schedule_stops_firing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let t0 = start();

    let manual = PeriodicJob::new("manual", "*/10 * * * * *", "removed", &json!({}))?;
    q.schedule_register(&manual, Registration::Operator, t0)
        .await?;
    q.schedule_tick(t0 + secs(10)).await?;
    q.schedule_remove("manual", t0 + secs(11)).await?;
    ensure!(q.schedules().await?.is_empty());
    q.schedule_tick(t0 + secs(30)).await?;
    expect_slots(&q, &manual, &[t0 + secs(10)]).await?;
    match q.schedule_remove("manual", t0 + secs(31)).await {
        Err(Error::UnknownSchedule { name }) if name == "manual" => {}
        other => bail!("removing it twice: {other:?}"),
    }

    // A process registers a code schedule with a 30 s lease, then stops (no renewal).
    let other = fx.another().await?;
    let clock = ManualClock::new(t0);
    let coded = PeriodicJob::new("coded", "*/10 * * * * *", "lapsed", &json!({}))?;
    Scheduler::builder(other.clone())
        .schedule(coded.clone())
        .clock(clock.clone())
        .lease(Duration::from_secs(30))
        .refresh_interval(Duration::from_secs(10))
        .build()?
        .register()
        .await?;
    match q.schedule_remove("coded", t0 + secs(5)).await {
        Err(Error::InvalidInput { field, .. }) if field == "name" => {}
        other => bail!("an operator removed a live code schedule: {other:?}"),
    }
    // Another process keeps ticking: the schedule fires while its lease runs...
    q.schedule_tick(t0 + secs(20)).await?;
    expect_slots(&q, &coded, &[t0 + secs(20)]).await?;
    // ...and no more once it ended (t0 + 30 s), though slots keep passing.
    for s in [31, 40, 50, 60] {
        q.schedule_tick(t0 + secs(s)).await?;
    }
    expect_slots(&q, &coded, &[t0 + secs(20)]).await?;
    let info = stored(&q, "coded").await?;
    ensure!(!info.is_active(t0 + secs(60)), "{info:?}");
    // A lapsed code schedule may be removed by an operator.
    q.schedule_remove("coded", t0 + secs(61)).await?;
    ensure!(q.schedules().await?.is_empty());
    Ok(())
}

/// A change of expression takes effect at the next registration (a deploy), starting afresh:
/// no slot of the new expression before the change; a change of payload keeps the last slot.
pub async fn schedules_changed_expression_takes_effect(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let t0 = start();
    let v1 = PeriodicJob::new("changing", "*/10 * * * * *", "changes", &json!({"v": 1}))?;
    q.schedule_register(&v1, LONG, t0).await?;
    q.schedule_tick(t0 + secs(10)).await?;
    // The next deploy runs every minute, at second 0.
    let v2 = PeriodicJob::new("changing", "0 * * * * *", "changes", &json!({"v": 1}))?;
    ensure!(q.schedule_register(&v2, LONG, t0 + secs(12)).await? == Registered::Changed);
    // Registering it again changes nothing.
    ensure!(q.schedule_register(&v2, LONG, t0 + secs(13)).await? == Registered::Unchanged);
    for s in [20, 30, 40, 50] {
        q.schedule_tick(t0 + secs(s)).await?;
    }
    // The old expression would have enqueued 20, 30, 40 and 50.
    expect_slots(&q, &v1, &[t0 + secs(10)]).await?;
    q.schedule_tick(t0 + secs(60)).await?;
    expect_slots(&q, &v1, &[t0 + secs(10), t0 + secs(60)]).await?;
    let info = stored(&q, "changing").await?;
    ensure!(info.job.expression() == "0 * * * * *", "{info:?}");
    // A new payload keeps the cadence and the last slot: the next slot carries it.
    let v3 = PeriodicJob::new("changing", "0 * * * * *", "changes", &json!({"v": 3}))?;
    ensure!(q.schedule_register(&v3, LONG, t0 + secs(61)).await? == Registered::Changed);
    ensure!(stored(&q, "changing").await?.last_slot == Some(t0 + secs(60)));
    q.schedule_tick(t0 + secs(120)).await?;
    expect_slots(&q, &v1, &[t0 + secs(10), t0 + secs(60), t0 + secs(120)]).await?;
    let jobs = q
        .list(ListRequest {
            queue: Some("changes".into()),
            state: None,
            limit: 1,
            before: None,
            kind: None,
        })
        .await?;
    ensure!(
        jobs.first().map(|j| j.payload_value()) == Some(json!({"v": 3})),
        "{jobs:?}"
    );
    Ok(())
}

/// The args of a kind that a schedule pushes.
#[derive(serde::Serialize, serde::Deserialize)]
struct Report {
    scope: String,
}

impl queue_core::JobArgs for Report {
    const KIND: &'static str = "nightly.report";
    fn options() -> queue_core::KindOptions {
        queue_core::KindOptions::new()
            .queue("reports")
            .priority(7)
            .max_attempts(4)
    }
}

/// A schedule of a kind pushes jobs of that kind, in its kind's queue with its priority and
/// attempts, stored and read back with the schedule; a change of kind is a change of the
/// schedule; a schedule without a kind pushes jobs without one.
pub async fn schedules_of_a_kind_push_jobs_of_that_kind(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let t0 = start();
    let report = PeriodicJob::of(
        "report",
        "*/10 * * * * *",
        &Report {
            scope: "all".into(),
        },
    )?;
    ensure!(report.queue() == "reports" && report.kind_value() == Some("nightly.report"));
    q.schedule_register(&report, Registration::Operator, t0)
        .await?;
    let info = stored(&q, "report").await?;
    ensure!(
        info.job == report,
        "stored {:?}, registered {report:?}",
        info.job
    );
    q.schedule_tick(t0 + secs(10)).await?;
    let job = pop_one(&q, "reports").await?.job;
    ensure!(
        job.kind.as_deref() == Some("nightly.report")
            && job.priority == 7
            && job.max_attempts == 4
            && job.payload_value() == json!({"scope": "all"}),
        "{job:?}"
    );
    // Registering it again changes nothing; another kind is a change, taken by the next slot.
    ensure!(
        q.schedule_register(&report, Registration::Operator, t0 + secs(11))
            .await?
            == Registered::Unchanged
    );
    let renamed = report.clone().kind("weekly.report");
    ensure!(
        q.schedule_register(&renamed, Registration::Operator, t0 + secs(12))
            .await?
            == Registered::Changed
    );
    ensure!(stored(&q, "report").await?.job.kind_value() == Some("weekly.report"));
    q.schedule_tick(t0 + secs(20)).await?;
    let job = pop_one(&q, "reports").await?.job;
    ensure!(job.kind.as_deref() == Some("weekly.report"), "{job:?}");
    // Without a kind, as before kinds: jobs without one.
    let plain = PeriodicJob::new("plain", "*/10 * * * * *", "plain", &json!({}))?;
    q.schedule_register(&plain, Registration::Operator, t0)
        .await?;
    ensure!(stored(&q, "plain").await?.job.kind_value().is_none());
    q.schedule_tick(t0 + secs(30)).await?;
    let job = pop_one(&q, "plain").await?.job;
    ensure!(job.kind.is_none(), "{job:?}");
    // A kind's name breaks the same rules as a job's: refused, nothing stored.
    let bad =
        PeriodicJob::new("bad-kind", "*/10 * * * * *", "plain", &json!({}))?.kind("no spaces");
    let refused = q.schedule_register(&bad, Registration::Operator, t0).await;
    ensure!(
        invalid_field(&refused) == Ok("kind".to_owned()),
        "a bad kind: {refused:?}"
    );
    ensure!(q
        .schedules()
        .await?
        .iter()
        .all(|s| s.job.name() != "bad-kind"));
    Ok(())
}

/// Bad schedules are refused with `InvalidInput` naming the field and rule, and nothing is
/// stored; an operator cannot overwrite a schedule a running process registered in code.
pub async fn schedules_bad_input_stores_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let t0 = start();
    let fine = |expression: &str| {
        PeriodicJob::new("fine", expression, "q", &json!({})).expect("a JSON value serializes")
    };
    let ok = || fine("* * * * *");
    let cases: Vec<(&str, PeriodicJob)> = vec![
        ("expression", fine("61 * * * *")),
        ("expression", fine("not a cron")),
        ("expression", fine("* * *")),
        ("expression", fine("0 0 30 2 *")),
        ("time_zone", ok().time_zone("Mars/Olympus_Mons")),
        ("name", PeriodicJob::new("", "* * * * *", "q", &1)?),
        ("name", PeriodicJob::new("has space", "* * * * *", "q", &1)?),
        (
            "name",
            PeriodicJob::new("n".repeat(129), "* * * * *", "q", &1)?,
        ),
        (
            "queue",
            PeriodicJob::new("fine", "* * * * *", "bad queue", &1)?,
        ),
        ("catch_up", ok().misfire(Misfire::CatchUp { max: 0 })),
        ("max_attempts", ok().max_attempts(0)),
    ];
    for (field, job) in &cases {
        for how in [Registration::Operator, LONG] {
            let got = invalid_field(&q.schedule_register(job, how, t0).await);
            ensure!(
                got.as_deref() == Ok(*field),
                "{job:?}: expected InvalidInput on {field}, got {got:?}"
            );
        }
    }
    let got = invalid_field(
        &q.schedule_register(
            &ok(),
            Registration::Code {
                lease: Duration::ZERO,
            },
            t0,
        )
        .await,
    );
    ensure!(got.as_deref() == Ok("lease"), "{got:?}");
    ensure!(
        q.schedules().await?.is_empty(),
        "a refused schedule was stored"
    );
    // The scheduler's builder names the schedule's index.
    let built = Scheduler::builder(q.clone())
        .schedule(ok())
        .schedule(fine("bad"))
        .build();
    ensure!(
        matches!(&built, Err(Error::InvalidInput { field, .. }) if field == "schedules[1].expression"),
        "{built:?}"
    );
    let twice = Scheduler::builder(q.clone())
        .schedule(ok())
        .schedule(ok())
        .build();
    ensure!(
        matches!(&twice, Err(Error::InvalidInput { field, .. }) if field == "schedules[1].name"),
        "{twice:?}"
    );
    ensure!(invalid_field(&q.schedule_remove("bad name", t0).await).as_deref() == Ok("name"));
    // A code schedule with a running lease belongs to its process.
    q.schedule_register(&ok(), LONG, t0).await?;
    let before = stored(&q, "fine").await?;
    let changed = fine("*/5 * * * *");
    let got = invalid_field(
        &q.schedule_register(&changed, Registration::Operator, t0 + secs(1))
            .await,
    );
    ensure!(got.as_deref() == Ok("name"), "{got:?}");
    let after = stored(&q, "fine").await?;
    ensure!(
        after.job == before.job && after.version == before.version,
        "{before:?} became {after:?}"
    );
    ensure!(jobs_per_key(&q, "q").await?.is_empty());
    Ok(())
}

/// A worker with a scheduler attached runs the slots' jobs; its shutdown stops the scheduler.
pub async fn schedules_worker_runs_the_slot_jobs(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let t0 = start();
    let clock = ManualClock::new(t0);
    let job = PeriodicJob::new("work", "* * * * * *", "slotwork", &json!({}))?;
    let scheduler = Scheduler::builder(q.clone())
        .schedule(job.clone())
        .clock(clock.clone())
        .build()?;
    // Registered before the clock moves (the worker's start registers it again, unchanged).
    scheduler.register().await?;
    let handle = queue_core::Worker::builder(q.clone(), "slotwork")
        .poll_interval(Duration::from_millis(5), Duration::from_millis(50))
        .handler_fn(|_ctx: JobContext| async { Ok::<(), JobError>(()) })
        .scheduler(scheduler)
        .build()?
        .start();
    for s in 1..=3 {
        clock.set(t0 + secs(s));
        let deadline = tokio::time::Instant::now() + TICK_TIMEOUT;
        loop {
            if handle.counters().completed() >= s as u64 {
                break;
            }
            ensure!(
                tokio::time::Instant::now() < deadline,
                "slot {s} was not run"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    handle.shutdown(Duration::from_secs(5)).await;
    expect_slots(&q, &job, &[t0 + secs(1), t0 + secs(2), t0 + secs(3)]).await?;
    let jobs = q
        .list(ListRequest {
            queue: Some("slotwork".into()),
            state: Some(JobState::Completed),
            limit: 10,
            before: None,
            kind: None,
        })
        .await?;
    ensure!(jobs.len() == 3, "{jobs:?}");
    // Stopped with the worker: a later slot is not enqueued.
    clock.set(t0 + secs(10));
    tokio::time::sleep(Duration::from_millis(100)).await;
    ensure!(jobs_per_key(&q, "slotwork").await?.len() == 3);
    Ok(())
}
