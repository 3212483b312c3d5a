//! Cooperative cancellation: a long job watches `ctx.cancelled()` while it works; an operator
//! cancels it (as `queue cancel <id>` or the dashboard would, here through a second queue value
//! on the same file), and the handler learns of it within the worker's `cancel_check`, winds
//! down within `cancel_grace`, and the job stays cancelled.
//!
//! `cargo run --example cancel` (uses a fresh file in the temporary directory).

use std::time::{Duration, Instant};

use dbqueue::worker::CancelReason;
use dbqueue::{JobContext, JobError, JobState, NewJob, Worker};

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-cancel-{}.db", std::process::id()));
    let url = format!("sqlite://{}", path.display());
    let queue = dbqueue::connect_and_migrate(&url).await?;
    // What an operator's process would have: its own connections to the same database.
    let operator = dbqueue::connect(&url).await?;
    let id = queue
        .push(NewJob::new(
            "reports",
            &serde_json::json!({ "month": "2026-11" }),
        )?)
        .await?;

    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<(CancelReason, Instant)>();
    let worker = Worker::builder(queue.clone(), "reports")
        .cancel_check(Duration::from_millis(200))
        .cancel_grace(Duration::from_secs(2))
        .handler_fn(move |ctx: JobContext| {
            let seen = seen_tx.clone();
            async move {
                // The work: 60 steps of a second each, unless the run is asked to stop.
                for step in 0..60 {
                    tokio::select! {
                        reason = ctx.cancelled() => {
                            let _ = seen.send((reason, Instant::now()));
                            println!("stopping at step {step}: {reason:?}");
                            // Whatever is returned now is not recorded: the job is cancelled.
                            return Ok(());
                        }
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
                Ok::<(), JobError>(())
            }
        })
        .build()?
        .start();

    // Let it start, then cancel it.
    while queue.get(id).await?.map(|j| j.state) != Some(JobState::Running) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let asked = Instant::now();
    operator.cancel(id).await?;
    if let Ok(Some((reason, at))) = tokio::time::timeout(Duration::from_secs(10), seen.recv()).await
    {
        println!(
            "the handler learned of it ({reason:?}) after {:?}",
            at - asked
        );
    }
    let report = worker.shutdown(Duration::from_secs(5)).await;
    let state = queue.get(id).await?.map(|j| j.state);
    println!(
        "job {id}: {state:?}; completed {}, lease lost {}",
        report.counters.completed, report.counters.lease_lost
    );
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
