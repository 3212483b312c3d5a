//! Queue controls: two workers with 8 slots each, as two processes of one service would run
//! them, share one SQLite file; their queue is limited to 2 jobs at once across both, then
//! paused (jobs pushed meanwhile wait), then resumed. A sampler reads the database while they
//! run and prints the most jobs it ever saw running.
//!
//! `cargo run --example controls` (uses a fresh file in the temporary directory).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dbqueue::{JobContext, JobError, NewJob, Queue, QueueStats, Worker, WorkerHandle};

const QUEUE: &str = "emails";

fn worker(queue: Arc<dyn Queue>) -> dbqueue::Result<WorkerHandle> {
    Ok(Worker::builder(queue, QUEUE)
        .concurrency(8)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(200))
        .handler_fn(|_ctx: JobContext| async move {
            // A job that takes a while, so the limit (not the handlers) decides how many run.
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok::<(), JobError>(())
        })
        .build()?
        .start())
}

async fn stats(queue: &Arc<dyn Queue>) -> dbqueue::Result<QueueStats> {
    Ok(queue.stats(Some(QUEUE)).await?.remove(0))
}

async fn push(queue: &Arc<dyn Queue>, n: usize) -> dbqueue::Result<()> {
    let jobs = (0..n)
        .map(|i| NewJob::new(QUEUE, &i))
        .collect::<Result<Vec<_>, _>>()?;
    queue.push_batch(jobs).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-controls-{}.db", std::process::id()));
    let url = format!("sqlite://{}", path.display());
    let queue = dbqueue::connect_and_migrate(&url).await?;
    // A second queue value with its own connections: what another process would have.
    let other = dbqueue::connect(&url).await?;

    // At most 2 jobs of the queue hold a lease at once, across every process.
    queue.set_concurrency_limit(QUEUE, Some(2)).await?;
    push(&queue, 40).await?;
    let one = worker(queue.clone())?;
    let two = worker(other.clone())?;

    // The sampler reads the database, not the workers.
    let most = Arc::new(AtomicU64::new(0));
    let sampler = {
        let queue = queue.clone();
        let most = most.clone();
        tokio::spawn(async move {
            loop {
                if let Ok(s) = stats(&queue).await {
                    most.fetch_max(s.running, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    let s = stats(&queue).await?;
    println!(
        "limited to {:?}: {} running, {} completed, {} waiting",
        s.concurrency_limit, s.running, s.completed, s.available
    );

    // Pause: running jobs finish, nothing more is given out, pushes are still stored.
    other.pause(QUEUE).await?;
    push(&other, 10).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let paused = stats(&queue).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let later = stats(&queue).await?;
    println!(
        "paused: {} running, {} completed, {} waiting; half a second later {} completed",
        paused.running, paused.completed, paused.available, later.completed
    );

    // Resume: the workers are woken and drain the rest, still 2 at a time.
    queue.resume(QUEUE).await?;
    while stats(&queue).await?.completed < 50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sampler.abort();
    one.shutdown(Duration::from_secs(5)).await;
    two.shutdown(Duration::from_secs(5)).await;
    let s = stats(&queue).await?;
    println!(
        "resumed: {} completed; the most jobs the database ever showed running: {}",
        s.completed,
        most.load(Ordering::Relaxed)
    );
    drop((queue, other));
    let _ = std::fs::remove_file(&path);
    Ok(())
}
