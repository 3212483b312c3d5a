//! The worker's job events (`Worker::events`): one per transition, with the job's fields, sent
//! where the worker records the transition; a subscriber that never reads holds nothing back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use queue_core::worker::{EventItem, Events, JobContext, JobError, JobEvent, Transition, Worker};
use queue_core::{JobId, JobState, KindOptions, Lease};
use serde_json::json;

use super::worker::wait_for_stats;
use super::{expect_state, get, job};
use crate::Ctx;

/// Every event a subscription holds now, with the number it lost.
fn take_all(events: &mut Events) -> (Vec<JobEvent>, u64) {
    let (mut got, mut lagged) = (Vec::new(), 0);
    while let Some(item) = events.try_recv() {
        match item {
            EventItem::Event(e) => got.push(e),
            EventItem::Lagged(n) => lagged += n,
            _ => {}
        }
    }
    (got, lagged)
}

/// The transitions of job `id`, in order.
fn transitions(events: &[JobEvent], id: JobId) -> Vec<Transition> {
    events
        .iter()
        .filter(|e| e.id == id)
        .map(|e| e.transition)
        .collect()
}

/// The one event of `id` with a transition that `pick` accepts.
fn event<'a>(
    events: &'a [JobEvent],
    id: JobId,
    what: &str,
    pick: impl Fn(&Transition) -> bool,
) -> anyhow::Result<&'a JobEvent> {
    let mut found = events.iter().filter(|e| e.id == id && pick(&e.transition));
    let first = found
        .next()
        .with_context(|| format!("no {what} event for job {id}: {events:?}"))?;
    ensure!(found.next().is_none(), "two {what} events for job {id}");
    Ok(first)
}

/// Each transition a worker makes delivers its event, with the job's id, queue, kind and
/// attempt, the handler's run time and the error: started and completed; failed with the
/// retry's delay; dead; snoozed with its delay; cancelled by an operator while it ran; its
/// lease lost (released by another process). The database holds what the events say.
pub async fn events_each_transition_delivers_its_event(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let other = fx.another().await?;
    const QUEUE: &str = "ev";
    let hour = Duration::from_secs(3600);
    let push = |kind: &'static str| {
        let q = q.clone();
        async move {
            q.push(job(QUEUE, json!({})).kind(kind).max_attempts(3))
                .await
        }
    };
    let ok = push("ok").await?;
    let flaky = push("flaky").await?;
    let bad = push("bad").await?;
    let busy = push("busy").await?;
    let long = push("long").await?;
    let lose = push("lose").await?;

    let (running_tx, mut running_rx) = tokio::sync::mpsc::unbounded_channel::<(String, Lease)>();
    let lost_once = Arc::new(AtomicBool::new(false));
    let holds = |name: &'static str| {
        let tx = running_tx.clone();
        let lost_once = lost_once.clone();
        move |ctx: JobContext| {
            let tx = tx.clone();
            let lost_once = lost_once.clone();
            async move {
                // The job whose lease is taken away runs again and then completes.
                if name == "lose" && lost_once.load(Ordering::SeqCst) {
                    return Ok(());
                }
                let _ = tx.send((name.to_owned(), ctx.lease()));
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok::<(), JobError>(())
            }
        }
    };
    let worker = Worker::builder(q.clone(), QUEUE)
        .concurrency(8)
        .lease(Duration::from_secs(5))
        .heartbeat(Duration::from_millis(100))
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .rescue_interval(None)
        .kind_fn("ok", KindOptions::new(), |_ctx| async { Ok(()) })
        .kind_fn("flaky", KindOptions::new(), move |_ctx| async move {
            Err(JobError::retry_after("flaky upstream", hour))
        })
        .kind_fn("bad", KindOptions::new(), |_ctx| async {
            Err(JobError::permanent("bad input"))
        })
        .kind_fn("busy", KindOptions::new(), move |_ctx| async move {
            Err(JobError::snooze(hour))
        })
        .kind_fn("long", KindOptions::new(), holds("long"))
        .kind_fn("lose", KindOptions::new(), holds("lose"))
        .build()?;
    let mut events = worker.events();
    let handle = worker.start();

    let mut leases = HashMap::new();
    while leases.len() < 2 {
        let (name, lease) = tokio::time::timeout(Duration::from_secs(20), running_rx.recv())
            .await
            .context("the long handlers did not start")?
            .context("channel closed")?;
        leases.insert(name, lease);
    }
    // An operator cancels one running job; another process releases the other's lease.
    other.cancel(long).await?;
    lost_once.store(true, Ordering::SeqCst);
    other.release(&leases["lose"]).await?;

    let settled = wait_for_stats(&q, QUEUE, Duration::from_secs(20), |s| {
        s.completed == 2 && s.dead == 1 && s.cancelled == 1 && s.running == 0
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(2)).await;
    settled?;
    let (got, lagged) = take_all(&mut events);
    ensure!(lagged == 0, "lost {lagged} events with room for 1,024");

    // The database says what the events say.
    expect_state(&q, ok, JobState::Completed).await?;
    let j = expect_state(&q, flaky, JobState::Pending).await?;
    ensure!(
        j.attempts == 1 && j.last_error.as_deref() == Some("flaky upstream"),
        "{j:?}"
    );
    expect_state(&q, bad, JobState::Dead).await?;
    let j = expect_state(&q, busy, JobState::Pending).await?;
    ensure!(j.attempts == 0 && j.snoozes == 1, "{j:?}");
    expect_state(&q, long, JobState::Cancelled).await?;
    let j = expect_state(&q, lose, JobState::Completed).await?;
    ensure!(
        j.attempts == 1,
        "released, the lost attempt was given back: {j:?}"
    );

    for e in &got {
        ensure!(e.queue == QUEUE, "{e:?}");
        ensure!(e.attempt == 1, "every run here is a first attempt: {e:?}");
        match e.transition {
            Transition::Started => ensure!(e.duration.is_none() && e.error.is_none(), "{e:?}"),
            _ => ensure!(e.duration.is_some(), "no run time: {e:?}"),
        }
    }
    let started = |t: &Transition| *t == Transition::Started;
    for (id, kind) in [
        (ok, "ok"),
        (flaky, "flaky"),
        (bad, "bad"),
        (busy, "busy"),
        (long, "long"),
    ] {
        let e = event(&got, id, "started", started)?;
        ensure!(e.kind.as_deref() == Some(kind), "{e:?}");
        ensure!(
            transitions(&got, id).len() == 2,
            "job {kind}: {:?}",
            transitions(&got, id)
        );
    }
    let e = event(&got, ok, "completed", |t| *t == Transition::Completed)?;
    ensure!(
        e.error.is_none() && e.kind.as_deref() == Some("ok"),
        "{e:?}"
    );
    let e = event(&got, flaky, "failed", |t| {
        matches!(t, Transition::Failed { .. })
    })?;
    let Transition::Failed { retry_in } = e.transition else {
        bail!("{e:?}")
    };
    ensure!(
        retry_in >= hour - Duration::from_secs(60),
        "retry in {retry_in:?}"
    );
    ensure!(e.error.as_deref() == Some("flaky upstream"), "{e:?}");
    let e = event(&got, bad, "dead", |t| *t == Transition::Dead)?;
    ensure!(e.error.as_deref() == Some("bad input"), "{e:?}");
    let e = event(&got, busy, "snoozed", |t| {
        matches!(t, Transition::Snoozed { .. })
    })?;
    let snoozed = Transition::Snoozed { delay: hour };
    ensure!(e.transition == snoozed, "{e:?}");
    let e = event(&got, long, "cancelled", |t| *t == Transition::Cancelled)?;
    ensure!(
        e.kind.as_deref() == Some("long") && e.error.is_some(),
        "{e:?}"
    );
    // The lost lease, and the second run that completed the job (which may start before the
    // first run's heartbeat learns that its lease is gone).
    let lose_runs = transitions(&got, lose);
    let count = |t: Transition| lose_runs.iter().filter(|x| **x == t).count();
    ensure!(
        lose_runs.len() == 4
            && count(Transition::Started) == 2
            && count(Transition::LeaseLost) == 1
            && count(Transition::Completed) == 1
            && lose_runs[0] == Transition::Started,
        "{lose_runs:?}"
    );
    let e = event(&got, lose, "lease lost", |t| *t == Transition::LeaseLost)?;
    ensure!(
        e.kind.as_deref() == Some("lose") && e.error.is_some(),
        "{e:?}"
    );
    ensure!(
        report.counters.lease_lost == 2 && report.counters.completed == 2,
        "{report:?}"
    );
    ensure!(get(&q, long).await?.attempts == 1);
    Ok(())
}

/// A subscriber that never reads does not hold the worker back: every job completes, and the
/// subscription then says how many events it lost beside the ones it kept (started and
/// completed for each job, all accounted for).
pub async fn events_slow_subscriber_does_not_stall_the_worker(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    const N: usize = 60;
    const CAPACITY: usize = 4;
    let ids = q
        .push_batch((0..N).map(|i| job("evs", json!(i))).collect())
        .await?;
    let worker = Worker::builder(q.clone(), "evs")
        .concurrency(4)
        .event_capacity(CAPACITY)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .handler_fn(|_ctx: JobContext| async { Ok::<(), JobError>(()) })
        .build()?;
    let mut never_read = worker.events();
    let handle = worker.start();
    let done = wait_for_stats(&q, "evs", Duration::from_secs(30), |s| {
        s.completed == N as u64
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(2)).await;
    done.context("the worker stalled behind a subscriber that never reads")?;
    for id in ids {
        expect_state(&q, id, JobState::Completed).await?;
    }
    ensure!(report.counters.completed == N as u64, "{report:?}");
    let (kept, lagged) = take_all(&mut never_read);
    ensure!(
        kept.len() == CAPACITY,
        "kept {} events, capacity {CAPACITY}",
        kept.len()
    );
    ensure!(
        lagged as usize + kept.len() == 2 * N,
        "lost {lagged} and kept {}: not the {} events of {N} jobs",
        kept.len(),
        2 * N
    );
    Ok(())
}
