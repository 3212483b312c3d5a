//! Waiting for work: in-process wake-ups everywhere, and cross-process ones where the database
//! delivers notifications (capability `Wakeups::ListenNotify`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use queue_core::{Queue, Wakeups};
use serde_json::json;

use super::{job, pop, LONG_LEASE};
use crate::Ctx;

/// Waits on `waiter` (re-waiting after spurious wake-ups) until a job of `queue` can be
/// popped; returns when it was popped.
fn spawn_waiter(
    waiter: Arc<dyn Queue>,
    queue: &'static str,
) -> tokio::task::JoinHandle<anyhow::Result<(Instant, usize)>> {
    tokio::spawn(async move {
        let mut waits = 0;
        loop {
            waiter.wait_for_work(queue, Duration::from_secs(10)).await;
            waits += 1;
            let got = pop(&waiter, queue, 1, LONG_LEASE, "waiter").await?;
            if !got.is_empty() {
                return Ok((Instant::now(), waits));
            }
            anyhow::ensure!(waits < 50, "woken 50 times without work");
        }
    })
}

/// A waiter in `wait_for_work` wakes soon after a push through the same queue value.
pub async fn push_wakes_waiter_in_process(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let waiter = spawn_waiter(q.clone(), "wake-local");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pushed = Instant::now();
    q.push(job("wake-local", json!(1))).await?;
    let (woke, _waits) = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .context("the waiter never woke")???;
    let latency = woke.saturating_duration_since(pushed);
    // Well inside the waiter's 10 s wait, and loose enough for a loaded machine.
    ensure!(
        latency < Duration::from_secs(3),
        "woke {latency:?} after the push"
    );
    Ok(())
}

/// A waiter on queue value A sees a push made through a separate queue value B (its own pool,
/// as another process): within milliseconds where the database delivers notifications
/// (`Wakeups::ListenNotify`), otherwise by its next poll. The waiter polls every
/// `poll`; it must find the job within `poll` plus two seconds without notifications, and with
/// them within three seconds although its poll interval is ten.
pub async fn a_push_reaches_a_waiter_in_another_process(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let a = fx.queue();
    let notified = a.capabilities().wakeups == Wakeups::ListenNotify;
    let poll = if notified {
        Duration::from_secs(10)
    } else {
        Duration::from_millis(500)
    };
    let b = fx.another().await?;
    // Let A start listening (where it can) before B pushes.
    let waiter = tokio::spawn(async move {
        let mut waits = 0;
        loop {
            a.wait_for_work("wake-remote", poll).await;
            waits += 1;
            if !pop(&a, "wake-remote", 1, LONG_LEASE, "waiter")
                .await?
                .is_empty()
            {
                return anyhow::Ok(Instant::now());
            }
            ensure!(waits < 50, "woken 50 times without work");
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pushed = Instant::now();
    b.push(job("wake-remote", json!(1))).await?;
    let woke = tokio::time::timeout(poll + Duration::from_secs(5), waiter)
        .await
        .context("the waiter on A never found B's job")???;
    let latency = woke.saturating_duration_since(pushed);
    let bound = if notified {
        Duration::from_secs(3)
    } else {
        poll + Duration::from_secs(2)
    };
    ensure!(
        latency < bound,
        "A found B's job {latency:?} after the push (bound {bound:?}, notifications: {notified})"
    );
    Ok(())
}

/// Every transition that makes a job due now wakes a waiter of the same queue value at once, on
/// every backend: a push, a batch push (per queue), a failure retried without delay, a release,
/// a rescue and a retry of a dead job. The waiters' poll timeout is far longer than the case.
pub async fn every_transition_to_due_wakes_waiters(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    // Waits (up to 20 s) for a wake-up on `queue` that `act` causes; the wake must come within
    // a second.
    async fn woken_by<F, Fut>(
        q: &Arc<dyn Queue>,
        queue: &'static str,
        what: &str,
        act: F,
    ) -> anyhow::Result<()>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<()>>,
    {
        // Drain any permit left by earlier transitions, so only `act` can wake the waiter.
        q.wait_for_work(queue, Duration::from_millis(20)).await;
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                q.wait_for_work(queue, Duration::from_secs(20)).await;
                t.elapsed()
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        act().await?;
        let waited = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .with_context(|| format!("{what}: the waiter was not woken"))??;
        ensure!(
            waited < Duration::from_secs(2),
            "{what}: woken after {waited:?}"
        );
        Ok(())
    }
    woken_by(&q, "wt", "push", || async {
        q.push(job("wt", json!(1)).max_attempts(10)).await?;
        Ok(())
    })
    .await?;
    woken_by(&q, "wt2", "batch push to another queue", || async {
        q.push_batch(vec![job("wt", json!(2)), job("wt2", json!(3))])
            .await?;
        Ok(())
    })
    .await?;
    let l = pop(&q, "wt", 1, LONG_LEASE, "w").await?.remove(0);
    woken_by(&q, "wt", "failure retried at once", || async {
        q.fail(
            &l.lease,
            queue_core::Failure::retry_after("x", Duration::ZERO),
        )
        .await?;
        Ok(())
    })
    .await?;
    let l = pop(&q, "wt", 1, LONG_LEASE, "w").await?.remove(0);
    woken_by(&q, "wt", "release", || async {
        q.release(&l.lease).await?;
        Ok(())
    })
    .await?;
    let l = pop(&q, "wt", 1, Duration::from_millis(150), "w")
        .await?
        .remove(0);
    super::sleep_until_db(&q, l.lease.expires_at).await?;
    woken_by(&q, "wt", "rescue", || async {
        ensure!(q.rescue_expired().await? == 1);
        Ok(())
    })
    .await?;
    let l = pop(&q, "wt", 1, LONG_LEASE, "w").await?.remove(0);
    q.fail(&l.lease, queue_core::Failure::permanent("x"))
        .await?;
    woken_by(&q, "wt", "retry of a dead job", || async {
        q.retry(l.job.id).await?;
        Ok(())
    })
    .await?;
    Ok(())
}
