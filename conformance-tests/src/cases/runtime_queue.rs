//! A running worker's queues changed through its handle: a queue added is served, a queue
//! scaled down never runs more than its new concurrency, a queue removed loses no job.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use queue_core::worker::{JobContext, JobError, Worker, MAX_CONCURRENCY};
use queue_core::JobState;
use serde_json::json;

use super::worker::wait_for_stats;
use super::{all_jobs, invalid_field, job};
use crate::Ctx;

/// A queue added to a running worker is served; bad changes name their field and change
/// nothing.
pub async fn runtime_queue_added_queue_is_served(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let ids = q
        .push_batch((0..10).map(|i| job("rq.b", json!(i))).collect())
        .await?;
    let handle = Worker::builder(q.clone(), "rq.a")
        .concurrency(2)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .handler_fn(|_ctx: JobContext| async { Ok::<(), JobError>(()) })
        .build()?
        .start();
    // Not served yet.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = wait_for_stats(&q, "rq.b", Duration::ZERO, |_| true).await?;
    ensure!(
        before.available == 10,
        "served before it was added: {before:?}"
    );
    handle.add_queue("rq.b", 3)?;
    let s = wait_for_stats(&q, "rq.b", Duration::from_secs(20), |s| s.completed == 10).await;
    let queues = handle.queues();
    let bad = [
        ("add 0", invalid_field(&handle.add_queue("rq.c", 0))),
        (
            "add too many",
            invalid_field(&handle.add_queue("rq.c", MAX_CONCURRENCY + 1)),
        ),
        ("add again", invalid_field(&handle.add_queue("rq.b", 1))),
        (
            "add bad name",
            invalid_field(&handle.add_queue("no spaces", 1)),
        ),
        (
            "scale to 0",
            invalid_field(&handle.set_concurrency("rq.b", 0)),
        ),
        (
            "scale unknown",
            invalid_field(&handle.set_concurrency("rq.zz", 1)),
        ),
        (
            "remove unknown",
            invalid_field(&handle.remove_queue("rq.zz").await),
        ),
    ];
    let after = handle.queues();
    handle.shutdown(Duration::from_secs(2)).await;
    s?;
    for id in ids {
        super::expect_state(&q, id, JobState::Completed).await?;
    }
    ensure!(
        queues == [("rq.a".to_owned(), 2), ("rq.b".to_owned(), 3)],
        "{queues:?}"
    );
    let expected = [
        "concurrency",
        "concurrency",
        "queue",
        "queue",
        "concurrency",
        "queue",
        "queue",
    ];
    for ((what, got), field) in bad.iter().zip(expected) {
        ensure!(
            got.as_deref() == Ok(field),
            "{what}: {got:?}, expected {field}"
        );
    }
    ensure!(
        after == queues,
        "a refused change changed the queues: {after:?}"
    );
    Ok(())
}

/// A queue scaled down from 8 to 2 while busy: once the jobs beyond the new concurrency have
/// finished, no more than 2 handlers run at once, and once the database has settled its running
/// jobs stay below the 8 of before (the 2, the one claimed for the next free slot, completions
/// being acknowledged); every job completes once.
pub async fn runtime_queue_scaled_down_never_exceeds_new_concurrency(
    ctx: Ctx,
) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    const N: usize = 60;
    let ids = q
        .push_batch((0..N).map(|i| job("rq.s", json!(i))).collect())
        .await?;
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (r, m) = (running.clone(), most.clone());
    let handle = Worker::builder(q.clone(), "rq.s")
        .concurrency(8)
        .prefetch(1)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .handler_fn(move |_ctx: JobContext| {
            let (r, m) = (r.clone(), m.clone());
            async move {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                r.fetch_sub(1, Ordering::SeqCst);
                Ok::<(), JobError>(())
            }
        })
        .build()?
        .start();
    let t = Instant::now();
    while most.load(Ordering::SeqCst) < 8 && t.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ensure!(most.load(Ordering::SeqCst) == 8, "never ran 8 at once");
    handle.set_concurrency("rq.s", 2)?;
    // The jobs running beyond 2 finish (each takes 100 ms).
    let t = Instant::now();
    while running.load(Ordering::SeqCst) > 2 && t.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    most.store(running.load(Ordering::SeqCst), Ordering::SeqCst);
    // The database first settles: the jobs that finished beyond 2 are acknowledged (in
    // batches, so a loaded machine can show them running a little longer); from then on it is
    // sampled.
    let settle = Instant::now();
    loop {
        let s = wait_for_stats(&q, "rq.s", Duration::ZERO, |_| true).await?;
        if s.running <= 4 || s.completed == N as u64 {
            break;
        }
        ensure!(
            settle.elapsed() < Duration::from_secs(10),
            "the database still showed {} running jobs 10 s after the scale-down to 2",
            s.running
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut db_most = 0;
    let mut samples = 0;
    loop {
        let s = wait_for_stats(&q, "rq.s", Duration::ZERO, |_| true).await?;
        db_most = db_most.max(s.running);
        samples += 1;
        if s.completed == N as u64 || t.elapsed() > Duration::from_secs(40) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let report = handle.shutdown(Duration::from_secs(2)).await;
    println!(
        "after the scale-down: at most {} handlers at once, at most {db_most} running jobs in the database ({samples} samples)",
        most.load(Ordering::SeqCst)
    );
    ensure!(
        most.load(Ordering::SeqCst) <= 2,
        "{} handlers ran at once after the scale-down to 2",
        most.load(Ordering::SeqCst)
    );
    // In the database, a job is running from its claim to its acknowledgement: beside the 2
    // that run, the one claimed for the next free slot (prefetch 1) and completions whose
    // batched acknowledgement has not committed yet (on a loaded machine a few batches);
    // never the 8 of before the scale-down.
    ensure!(
        db_most < 8,
        "the database showed {db_most} running jobs after the scale-down to 2 (prefetch 1)"
    );
    for id in ids {
        let j = super::expect_state(&q, id, JobState::Completed).await?;
        ensure!(j.attempts == 1, "{j:?}");
    }
    ensure!(report.counters.completed == N as u64, "{report:?}");
    Ok(())
}

/// A queue removed from a busy worker loses nothing: its jobs end completed (on their first
/// attempt) or pending with their attempt given back (claimed but not started, or stopped at
/// the shutdown timeout); none is left running, its jobs pushed later wait, and the worker's
/// other queue is still served.
pub async fn runtime_queue_removed_queue_loses_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    const N: usize = 40;
    q.push_batch((0..N).map(|i| job("rq.r", json!(i))).collect())
        .await?;
    let handle = Worker::builder(q.clone(), "rq.k")
        .concurrency(2)
        .queue("rq.r", 4)
        .prefetch(4)
        .shutdown_timeout(Duration::from_millis(500))
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .handler_fn(|ctx: JobContext| async move {
            // Every fifth job outlives the removal's timeout.
            let i = ctx.job.payload_value().as_u64().unwrap_or(0);
            let ms = if i % 5 == 4 { 10_000 } else { 50 };
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<(), JobError>(())
        })
        .build()?
        .start();
    // Some jobs done (however slow the machine), the long ones running.
    let mid = wait_for_stats(&q, "rq.r", Duration::from_secs(20), |s| s.completed >= 2).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t = Instant::now();
    handle.remove_queue("rq.r").await?;
    mid?;
    let took = t.elapsed();
    let removed = wait_for_stats(&q, "rq.r", Duration::ZERO, |_| true).await?;
    let late = q.push(job("rq.r", json!("late"))).await?;
    let kept = q.push(job("rq.k", json!(1))).await?;
    let served = wait_for_stats(&q, "rq.k", Duration::from_secs(20), |s| s.completed == 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let queues = handle.queues();
    let report = handle.shutdown(Duration::from_secs(2)).await;
    served.context("the remaining queue is not served")?;
    ensure!(took < Duration::from_secs(10), "the removal took {took:?}");
    ensure!(
        removed.running == 0,
        "running after the removal: {removed:?}"
    );
    ensure!(queues == [("rq.k".to_owned(), 2)], "{queues:?}");
    let mut completed = 0;
    for j in all_jobs(&q).await?.iter().filter(|j| j.queue == "rq.r") {
        match j.state {
            JobState::Completed => {
                ensure!(j.attempts == 1, "{j:?}");
                completed += 1;
            }
            JobState::Pending => ensure!(
                j.attempts == 0 && j.lease_expires_at.is_none() && j.worker.is_none(),
                "job {} given back with attempts {} (or still leased)",
                j.id,
                j.attempts
            ),
            other => anyhow::bail!("job {} is {other} after the removal", j.id),
        }
    }
    ensure!(
        completed > 0 && completed < N,
        "{completed} of {N} completed"
    );
    super::expect_state(&q, late, JobState::Pending).await?;
    super::expect_state(&q, kept, JobState::Completed).await?;
    ensure!(report.counters.released > 0, "nothing released: {report:?}");
    Ok(())
}
