//! The worker runtime of the core (`queue_core::worker`) against a real backend.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use queue_core::worker::{JobContext, JobError, Worker};
use queue_core::{JobState, Queue, QueueStats};
use serde_json::json;

use super::{all_jobs, expect_state, job};
use crate::Ctx;

/// Waits (polling `stats`) until `done` holds for `queue`, or fails after `within`.
pub(crate) async fn wait_for_stats(
    q: &Arc<dyn Queue>,
    queue: &str,
    within: Duration,
    done: impl Fn(&QueueStats) -> bool,
) -> anyhow::Result<QueueStats> {
    let t = Instant::now();
    loop {
        let s = q
            .stats(Some(queue))
            .await?
            .into_iter()
            .find(|s| s.queue == queue)
            .unwrap_or_default();
        if done(&s) {
            return Ok(s);
        }
        if t.elapsed() > within {
            bail!("after {within:?} the stats of {queue} are still {s:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Shutting a busy worker down with a short deadline loses nothing: every job ends completed
/// or pending with the interrupted attempt not counted; none is left running.
pub async fn worker_graceful_shutdown_loses_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    const N: usize = 40;
    let ids = q
        .push_batch((0..N).map(|i| job("gs", json!({ "i": i }))).collect())
        .await?;
    let handle = Worker::builder(q.clone(), "gs")
        .concurrency(4)
        .prefetch(4)
        .lease(Duration::from_secs(30))
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .rescue_interval(None)
        .handler_fn(|ctx: JobContext| async move {
            let i = ctx.job.payload_value()["i"].as_u64().unwrap_or(0);
            // Most jobs are quick; every fourth one takes far longer than the deadline.
            let ms = if i % 4 == 3 { 5_000 } else { 150 };
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<(), JobError>(())
        })
        .build()?
        .start();
    // Mid-way: some jobs done (however slow the machine), the long ones running.
    let mid = wait_for_stats(&q, "gs", Duration::from_secs(20), |s| s.completed >= 2).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let report = handle.shutdown(Duration::from_millis(300)).await;
    mid?;
    ensure!(
        report.all_settled(),
        "the worker left claimed jobs unsettled: {report:?}"
    );
    ensure!(
        report.elapsed < Duration::from_secs(5),
        "shutdown took {:?}",
        report.elapsed
    );

    let jobs = all_jobs(&q).await?;
    ensure!(jobs.len() == N, "{} jobs stored, expected {N}", jobs.len());
    let stored: HashSet<_> = jobs.iter().map(|j| j.id).collect();
    ensure!(ids.iter().all(|id| stored.contains(id)), "a job was lost");
    let mut completed = 0;
    for j in &jobs {
        match j.state {
            JobState::Completed => {
                ensure!(
                    j.attempts == 1,
                    "completed job {} has attempts {}",
                    j.id,
                    j.attempts
                );
                completed += 1;
            }
            JobState::Pending => ensure!(
                j.attempts == 0 && j.lease_expires_at.is_none(),
                "job {} was given back with attempts {} (the interrupted attempt was counted)",
                j.id,
                j.attempts
            ),
            other => bail!("job {} is {other} after shutdown", j.id),
        }
    }
    ensure!(
        completed > 0 && completed < N,
        "{completed} of {N} completed: the shutdown was not mid-way"
    );
    ensure!(
        report.counters.completed == completed as u64,
        "report says {} completed, the database {completed}",
        report.counters.completed
    );
    Ok(())
}

/// A panicking handler is recorded as a failure: attempt counted, the panic message in
/// `last_error`, and the worker keeps going.
pub async fn worker_panic_recorded_as_failure(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let bad = q
        .push(job("pn", json!({ "panic": true })).max_attempts(1))
        .await?;
    let good = q.push(job("pn", json!({ "panic": false }))).await?;
    let handle = Worker::builder(q.clone(), "pn")
        .concurrency(2)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .handler_fn(|ctx: JobContext| async move {
            if ctx.job.payload_value()["panic"] == json!(true) {
                panic!("handler exploded on purpose 4711");
            }
            Ok::<(), JobError>(())
        })
        .build()?
        .start();
    let s = wait_for_stats(&q, "pn", Duration::from_secs(10), |s| {
        s.dead == 1 && s.completed == 1
    })
    .await;
    let counters = handle.counters().snapshot();
    let report = handle.shutdown(Duration::from_secs(2)).await;
    s?;
    let j = expect_state(&q, bad, JobState::Dead).await?;
    ensure!(j.attempts == 1, "attempts {}", j.attempts);
    let err = j.last_error.unwrap_or_default();
    ensure!(
        err.contains("handler exploded on purpose 4711"),
        "last_error {err:?} lacks the panic message"
    );
    expect_state(&q, good, JobState::Completed).await?;
    ensure!(
        counters.panicked >= 1 || report.counters.panicked >= 1,
        "no panic counted: {report:?}"
    );
    Ok(())
}

/// A job running far longer than its lease is kept alive by the heartbeat: the rescuer (the
/// worker's own and another one) never takes it, and it completes on its first attempt.
///
/// The job runs for two and a half leases. Each extension has the lease less one heartbeat
/// (1.8 s) to land, which a loaded two-core machine running other cases beside this one gives
/// it; 300 ms was not always enough there.
pub async fn worker_heartbeat_keeps_long_job(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let other = fx.another().await?;
    let id = q.push(job("hb", json!("long"))).await?;
    let handle = Worker::builder(q.clone(), "hb")
        .concurrency(1)
        .lease(Duration::from_millis(2_000))
        .heartbeat(Duration::from_millis(200))
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .rescue_interval(Some(Duration::from_millis(100)))
        .handler_fn(|_ctx: JobContext| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<(), JobError>(())
        })
        .build()?
        .start();
    // Another process's rescuer runs too.
    let t = Instant::now();
    let mut rescued = 0;
    while t.elapsed() < Duration::from_millis(5_600) {
        rescued += other.rescue_expired().await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = wait_for_stats(&q, "hb", Duration::from_secs(5), |s| s.completed == 1).await;
    let report = handle.shutdown(Duration::from_secs(2)).await;
    s?;
    ensure!(rescued == 0, "the external rescuer took {rescued} jobs");
    let j = expect_state(&q, id, JobState::Completed).await?;
    ensure!(j.attempts == 1, "the long job took {} attempts", j.attempts);
    ensure!(
        report.counters.completed == 1 && report.counters.lease_lost == 0,
        "{report:?}"
    );
    Ok(())
}

/// A worker drains a queue end to end: jobs that fail once are retried after the backoff and
/// complete; a permanent failure goes dead; nothing is left behind.
pub async fn worker_drains_with_retries(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    const N: usize = 30;
    let jobs: Vec<_> = (0..N)
        .map(|i| job("dr", json!({ "i": i })).max_attempts(3))
        .collect();
    let ids = q.push_batch(jobs).await?;
    let seen: Arc<Mutex<Vec<(u64, u32)>>> = Arc::default(); // (job, attempt) per handler run
    let seen2 = seen.clone();
    let handle = Worker::builder(q.clone(), "dr")
        .concurrency(8)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .typed(move |p: serde_json::Value, ctx: JobContext| {
            let seen = seen2.clone();
            async move {
                let i = p["i"].as_u64().unwrap_or(0);
                seen.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((i, ctx.attempt()));
                if i == 7 {
                    return Err(JobError::permanent("bad input 7"));
                }
                if i.is_multiple_of(3) && ctx.attempt() == 1 {
                    return Err(JobError::retryable(format!("transient {i}")));
                }
                Ok(())
            }
        })
        .build()?
        .start();
    let s = wait_for_stats(&q, "dr", Duration::from_secs(20), |s| {
        s.completed == (N - 1) as u64 && s.dead == 1
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(2)).await;
    let s = s?;
    ensure!(
        s.available == 0 && s.scheduled == 0 && s.running == 0,
        "{s:?}"
    );
    for (i, id) in ids.iter().enumerate() {
        let j = super::get(&q, *id).await?;
        let expected = match i {
            7 => (JobState::Dead, 1),
            i if i % 3 == 0 => (JobState::Completed, 2),
            _ => (JobState::Completed, 1),
        };
        ensure!(
            (j.state, j.attempts) == expected,
            "job {i}: {} with {} attempts, expected {expected:?}",
            j.state,
            j.attempts
        );
        if i % 3 == 0 && i != 7 {
            ensure!(
                j.last_error.as_deref() == Some(&*format!("transient {i}")),
                "job {i} last_error {:?}",
                j.last_error
            );
        }
    }
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let retried = (0..N as u64).filter(|i| i % 3 == 0).count();
    ensure!(
        seen.len() == N + retried,
        "the handler ran {} times, expected {}",
        seen.len(),
        N + retried
    );
    ensure!(
        report.counters.retried == retried as u64 && report.counters.dead == 1,
        "{report:?}"
    );
    Ok(())
}

/// The worker's in-process wake-up: a worker idle on a long poll interval picks up a job
/// pushed through the same queue value at once.
pub async fn worker_wakes_on_push(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let handle = Worker::builder(q.clone(), "wk")
        .concurrency(1)
        .poll_interval(Duration::from_secs(5), Duration::from_secs(10))
        .handler_fn(|_ctx: JobContext| async move { Ok::<(), JobError>(()) })
        .build()?
        .start();
    // Let it go idle.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let id = q.push(job("wk", json!(1))).await?;
    let s = wait_for_stats(&q, "wk", Duration::from_secs(4), |s| s.completed == 1).await;
    handle.shutdown(Duration::from_secs(2)).await;
    s.context("the idle worker was not woken by the push")?;
    expect_state(&q, id, JobState::Completed).await?;
    Ok(())
}

/// A handler that completes its job in its own transaction (exactly-once effects) and says so
/// with `mark_completed` is counted completed by the worker, which sends no acknowledgement of
/// its own: no lost lease, one effect and one completion per job.
pub async fn worker_counts_a_job_completed_in_the_handlers_transaction(
    ctx: Ctx,
) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    if fx.transactions().is_none() {
        return Err(ctx.skip("the backend offers no work in the caller's transaction"));
    }
    let q = fx.queue();
    q.push_batch((0..8).map(|i| job("wtx", json!(i))).collect())
        .await?;
    let hooks = fx.clone();
    let handle = Worker::builder(q.clone(), "wtx")
        .concurrency(2)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .handler_fn(move |ctx: JobContext| {
            let hooks = hooks.clone();
            async move {
                let tx = hooks
                    .transactions()
                    .ok_or_else(|| JobError::permanent("no hooks"))?;
                tx.complete_in_tx(&ctx.lease(), "wtx-effect")
                    .await
                    .map_err(|e| JobError::retryable(e.to_string()))?;
                ctx.mark_completed();
                Ok(())
            }
        })
        .build()?
        .start();
    let s = wait_for_stats(&q, "wtx", Duration::from_secs(10), |s| s.completed == 8).await;
    let report = handle.shutdown(Duration::from_secs(2)).await;
    s?;
    ensure!(report.counters.completed == 8, "{report:?}");
    ensure!(
        report.counters.lease_lost == 0,
        "counted as lost: {report:?}"
    );
    let hooks = fx.transactions().context("hooks")?;
    ensure!(hooks.effects("wtx-effect").await? == 8);
    Ok(())
}
