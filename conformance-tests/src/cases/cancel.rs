//! Cooperative cancellation in the worker (`JobContext::cancelled`): an operator's cancel, a
//! lost lease, a timeout and the shutdown each reach the running handler with their reason;
//! what the handler does after an operator's cancel cannot complete the job.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use queue_core::worker::{CancelReason, JobContext, JobError, Worker};
use queue_core::{JobState, KindOptions, Lease, Wakeups};
use serde_json::json;

use super::worker::wait_for_stats;
use super::{expect_cancelled, expect_state, job};
use crate::Ctx;

/// The bound this suite holds an operator's cancel to (the guide quotes what it measured).
const CANCEL_BOUND: Duration = Duration::from_secs(5);

type Started = tokio::sync::mpsc::UnboundedSender<Lease>;
/// Why and when a handler learned it should stop, and whether `is_cancelled` and
/// `cancel_reason` said the same then.
type Seen = tokio::sync::mpsc::UnboundedSender<(CancelReason, Instant, bool)>;

/// A handler that says it started, waits for its cancellation, says why and when, and returns
/// `Ok` (which must not complete a cancelled job).
fn waits_for_cancel(
    started: Started,
    seen: Seen,
) -> impl Fn(JobContext) -> futures::future::BoxFuture<'static, Result<(), JobError>>
       + Send
       + Sync
       + 'static {
    move |ctx: JobContext| {
        let (started, seen) = (started.clone(), seen.clone());
        Box::pin(async move {
            let _ = started.send(ctx.lease());
            let reason = ctx.cancelled().await;
            let agree = ctx.is_cancelled() && ctx.cancel_reason() == Some(reason);
            let _ = seen.send((reason, Instant::now(), agree));
            Ok(())
        })
    }
}

/// Cancels the job of the handler that starts first and measures how long its handler took to
/// learn of it; then the job must stay cancelled, and its lease complete nothing.
async fn operator_cancel(ctx: Ctx, check: Option<Duration>, queue: &str) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let other = fx.another().await?;
    let id = q.push(job(queue, json!({}))).await?;
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let mut builder = Worker::builder(q.clone(), queue)
        .concurrency(1)
        // The heartbeat alone would learn of the cancel only after 10 s.
        .lease(Duration::from_secs(30))
        .heartbeat(Duration::from_secs(10))
        .cancel_grace(Duration::from_secs(5))
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .rescue_interval(None)
        .handler_fn(waits_for_cancel(started_tx, seen_tx));
    if let Some(every) = check {
        builder = builder.cancel_check(every);
    }
    let handle = builder.build()?.start();
    let lease = tokio::time::timeout(Duration::from_secs(20), started.recv())
        .await
        .context("the handler did not start")?
        .context("channel closed")?;
    // Another process's operator, as the dashboard or `queue cancel` would be.
    let asked = Instant::now();
    other.cancel(id).await?;
    let got = tokio::time::timeout(Duration::from_secs(20), seen.recv()).await;
    let lost = wait_for_stats(&q, queue, Duration::from_secs(10), |s| s.running == 0).await;
    let report = handle.shutdown(Duration::from_secs(5)).await;
    let (reason, at, agree) = got
        .context("the handler never learned of the cancel")?
        .context("channel closed")?;
    ensure!(
        agree,
        "is_cancelled and cancel_reason disagree with cancelled()"
    );
    let latency = at - asked;
    println!("{queue}: the running handler learned of the operator's cancel after {latency:?}");
    ensure!(reason == CancelReason::Cancelled, "reason {reason:?}");
    ensure!(latency < CANCEL_BOUND, "the cancel took {latency:?}");
    lost?;
    // The handler returned Ok after the cancel: nothing completed the job.
    let j = expect_state(&q, id, JobState::Cancelled).await?;
    ensure!(j.output.is_none(), "{j:?}");
    expect_cancelled("ack after the cancel", id, q.ack(&lease).await)?;
    expect_state(&q, id, JobState::Cancelled).await?;
    ensure!(
        report.counters.completed == 0 && report.counters.lease_lost == 1,
        "{report:?}"
    );
    Ok(())
}

/// An operator's cancel of a running job reaches its handler within the bound through the
/// worker's short check of its running jobs (`cancel_check`), on every backend.
pub async fn cancel_signal_operator_cancel_reaches_the_handler(ctx: Ctx) -> anyhow::Result<()> {
    operator_cancel(ctx, Some(Duration::from_millis(250)), "cso").await
}

/// Where the database sends notifications, an operator's cancel reaches the running handler
/// through them, with no check of its own and long before the heartbeat.
pub async fn cancel_signal_reaches_the_holder_by_notification(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    if fx.queue().capabilities().wakeups != Wakeups::ListenNotify {
        return Err(ctx.skip("the backend sends no notifications across queue values"));
    }
    drop(fx);
    operator_cancel(ctx, None, "csn").await
}

/// A lost lease and a timeout each reach the running handler with their reason; the job whose
/// lease was lost runs again, and the one that timed out fails as a timeout.
pub async fn cancel_signal_lease_lost_and_timeout_give_their_reasons(
    ctx: Ctx,
) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let other = fx.another().await?;
    let lose = q.push(job("csl", json!({})).kind("lose")).await?;
    let slow = q
        .push(job("csl", json!({})).kind("slow").max_attempts(1))
        .await?;
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel::<Lease>();
    let (seen_tx, mut seen) =
        tokio::sync::mpsc::unbounded_channel::<(CancelReason, Instant, bool)>();
    let ran_again = Arc::new(AtomicBool::new(false));
    let waits = waits_for_cancel(started_tx.clone(), seen_tx.clone());
    let again = ran_again.clone();
    let handle = Worker::builder(q.clone(), "csl")
        .concurrency(2)
        .lease(Duration::from_secs(5))
        .heartbeat(Duration::from_millis(200))
        .cancel_grace(Duration::from_secs(5))
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .rescue_interval(None)
        .kind_fn("lose", KindOptions::new(), move |ctx| {
            let first = !again.swap(true, Ordering::SeqCst);
            let run = if first { Some(waits(ctx)) } else { None };
            async move {
                match run {
                    Some(run) => run.await,
                    // The second run, after the lease was taken away, completes.
                    None => Ok(()),
                }
            }
        })
        .kind_fn(
            "slow",
            KindOptions::new().timeout(Duration::from_millis(300)),
            {
                let seen = seen_tx.clone();
                move |ctx: JobContext| {
                    let seen = seen.clone();
                    async move {
                        let reason = ctx.cancelled().await;
                        let _ = seen.send((reason, Instant::now(), ctx.is_cancelled()));
                        Ok::<(), JobError>(())
                    }
                }
            },
        )
        .build()?
        .start();
    let lease = tokio::time::timeout(Duration::from_secs(20), started.recv())
        .await
        .context("the handler of `lose` did not start")?
        .context("channel closed")?;
    other.release(&lease).await?;
    let mut reasons = Vec::new();
    while reasons.len() < 2 {
        let (reason, _, agree) = tokio::time::timeout(Duration::from_secs(20), seen.recv())
            .await
            .with_context(|| format!("only {reasons:?} reached the handlers"))?
            .context("channel closed")?;
        ensure!(
            agree,
            "is_cancelled disagrees with cancelled() ({reason:?})"
        );
        reasons.push(reason);
    }
    let settled = wait_for_stats(&q, "csl", Duration::from_secs(20), |s| {
        s.completed == 1 && s.dead == 1
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(2)).await;
    settled?;
    reasons.sort_by_key(|r| format!("{r:?}"));
    ensure!(
        reasons == [CancelReason::LeaseLost, CancelReason::Timeout],
        "{reasons:?}"
    );
    let j = expect_state(&q, lose, JobState::Completed).await?;
    ensure!(j.attempts == 1, "{j:?}");
    let j = expect_state(&q, slow, JobState::Dead).await?;
    ensure!(
        j.last_error
            .as_deref()
            .is_some_and(|e| e.contains("timed out")),
        "{j:?}"
    );
    ensure!(report.counters.lease_lost == 1, "{report:?}");
    Ok(())
}

/// The shutdown reaches a running handler at once, as a reason to finish: one that finishes
/// before the deadline has its outcome (and output) recorded, and none is stopped.
pub async fn cancel_signal_shutdown_lets_the_handler_finish(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("css", json!({}))).await?;
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel::<()>();
    let handle = Worker::builder(q.clone(), "css")
        .concurrency(1)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .handler_fn(move |ctx: JobContext| {
            let started = started_tx.clone();
            async move {
                let _ = started.send(());
                let reason = ctx.cancelled().await;
                ctx.record_output(&json!({ "stopped": format!("{reason:?}") }))?;
                Ok::<(), JobError>(())
            }
        })
        .build()?
        .start();
    tokio::time::timeout(Duration::from_secs(20), started.recv())
        .await
        .context("the handler did not start")?;
    let report = handle.shutdown(Duration::from_secs(20)).await;
    ensure!(
        report.aborted == 0 && report.counters.completed == 1,
        "{report:?}"
    );
    ensure!(
        report.elapsed < Duration::from_secs(10),
        "the shutdown waited for its deadline: {report:?}"
    );
    let j = expect_state(&q, id, JobState::Completed).await?;
    let output: Option<serde_json::Value> = j.output()?;
    ensure!(
        output == Some(json!({ "stopped": "Shutdown" })),
        "{output:?}"
    );
    Ok(())
}
