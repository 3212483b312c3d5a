//! Waiting for a job (`Queue::wait`, `wait_output`, `push_and_wait`): the finished job as
//! stored, whichever way it finished; a clear error for a timeout, an unknown id and a zero
//! timeout.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use queue_core::worker::{JobContext, JobError, Worker};
use queue_core::{Error, JobState, Queue};
use serde_json::json;

use super::{all_jobs, expect_state, invalid_field, job};
use crate::Ctx;

/// A wait returns the job once it finished: completed with its output (also deserialized), dead
/// with its error, cancelled; `push_and_wait` pushes and returns the completed job. What it
/// returns is what the database holds.
pub async fn wait_returns_the_finished_job(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let other = fx.another().await?;
    let handle = Worker::builder(q.clone(), "wt")
        .concurrency(4)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .handler_fn(|ctx: JobContext| async move {
            let n = ctx.job.payload_value()["n"].as_i64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(150)).await;
            if n < 0 {
                return Err(JobError::permanent("negative input"));
            }
            ctx.record_output(&json!({ "double": 2 * n }))?;
            Ok(())
        })
        .build()?
        .start();
    let within = Duration::from_secs(20);
    let ok = q.push(job("wt", json!({ "n": 21 }))).await?;
    let bad = q.push(job("wt", json!({ "n": -1 }))).await?;
    // Another queue, which no worker serves: it is cancelled while the wait runs.
    let idle = q.push(job("wt.idle", json!({}))).await?;
    let canceller = {
        let other = other.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            other.cancel(idle).await
        })
    };
    let t = Instant::now();
    let done = q.wait(ok, within).await;
    let waited = t.elapsed();
    let (again, output) = q.wait_output::<serde_json::Value>(ok, within).await?;
    let dead = q.wait(bad, within).await;
    let cancelled = q.wait(idle, within).await;
    let pushed = q.push_and_wait(job("wt", json!({ "n": 5 })), within).await;
    handle.shutdown(Duration::from_secs(2)).await;
    canceller.await??;
    let done = done?;
    println!("the wait for a 150 ms job returned after {waited:?}");
    ensure!(done.state == JobState::Completed, "{done:?}");
    ensure!(output == Some(json!({ "double": 42 })), "{output:?}");
    let stored = expect_state(&q, ok, JobState::Completed).await?;
    ensure!(
        stored.output.as_deref().map(|o| o.get()) == done.output.as_deref().map(|o| o.get())
            && again.id == ok,
        "{stored:?}"
    );
    let dead = dead?;
    ensure!(
        dead.state == JobState::Dead && dead.last_error.as_deref() == Some("negative input"),
        "{dead:?}"
    );
    expect_state(&q, bad, JobState::Dead).await?;
    let cancelled = cancelled?;
    ensure!(cancelled.state == JobState::Cancelled, "{cancelled:?}");
    expect_state(&q, idle, JobState::Cancelled).await?;
    let pushed = pushed?;
    ensure!(pushed.state == JobState::Completed, "{pushed:?}");
    let output: Option<serde_json::Value> = pushed.output()?;
    ensure!(output == Some(json!({ "double": 10 })), "{output:?}");
    expect_state(&q, pushed.id, JobState::Completed).await?;
    Ok(())
}

/// A wait that outlives its timeout says so and changes nothing; an unknown id is not found; a
/// zero timeout is refused naming `timeout` (and `push_and_wait` then pushes nothing).
pub async fn wait_timeout_unknown_and_bad_input(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q: std::sync::Arc<dyn Queue> = fx.queue();
    let id = q.push(job("wt.t", json!({}))).await?;
    let t = Instant::now();
    match q.wait(id, Duration::from_millis(300)).await {
        Err(Error::WaitTimedOut { job, waited }) => {
            ensure!(
                job == id && waited == Duration::from_millis(300),
                "{job} {waited:?}"
            );
        }
        other => bail!("a wait for a pending job returned {other:?}"),
    }
    ensure!(t.elapsed() >= Duration::from_millis(300), "returned early");
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.attempts == 0, "{j:?}");
    let unknown = queue_core::JobId::new();
    match q.wait(unknown, Duration::from_secs(1)).await {
        Err(Error::NotFound { job }) if job == unknown => {}
        other => bail!("a wait for an unknown id returned {other:?}"),
    }
    let r = q.wait(id, Duration::ZERO).await;
    ensure!(invalid_field(&r) == Ok("timeout".into()), "{r:?}");
    let r = q.push_and_wait(job("wt.t", json!(2)), Duration::ZERO).await;
    ensure!(invalid_field(&r) == Ok("timeout".into()), "{r:?}");
    ensure!(
        all_jobs(&q).await?.len() == 1,
        "push_and_wait pushed before refusing"
    );
    Ok(())
}
