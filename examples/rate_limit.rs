//! A rate limit: a partner's API takes at most 5 calls per second, and two workers (as two
//! processes of one service would run them) share one SQLite file and its queue. Each handler
//! notes when its job started; at the end the example prints how many started in each
//! one-second window, which is never more than 5, however many slots the workers have.
//!
//! `cargo run --example rate_limit` (uses a fresh file in the temporary directory; about 4 s).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dbqueue::{JobContext, JobError, NewJob, Queue, RateLimit, Worker, WorkerHandle};

const QUEUE: &str = "partner";
const LEASE: Duration = Duration::from_secs(30);

fn worker(queue: Arc<dyn Queue>, starts: Arc<Mutex<Vec<i64>>>) -> dbqueue::Result<WorkerHandle> {
    Ok(Worker::builder(queue, QUEUE)
        .concurrency(8)
        .lease(LEASE)
        .handler_fn(move |ctx: JobContext| {
            let starts = starts.clone();
            async move {
                // The job started when it was claimed: its lease's expiry less the lease, by
                // the clock the rate limit counts with.
                let start = ctx.lease().expires_at - LEASE;
                starts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(start.timestamp_millis());
                Ok::<(), JobError>(())
            }
        })
        .build()?
        .start())
}

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-rate-{}.db", std::process::id()));
    let url = format!("sqlite://{}", path.display());
    let queue = dbqueue::connect_and_migrate(&url).await?;
    let other = dbqueue::connect(&url).await?;

    // At most 5 jobs of the queue start in each one-second window, across every process.
    queue
        .set_rate_limit(QUEUE, Some(RateLimit::new(5, Duration::from_secs(1))?))
        .await?;
    let jobs = (0..20)
        .map(|i| NewJob::new(QUEUE, &i))
        .collect::<Result<Vec<_>, _>>()?;
    queue.push_batch(jobs).await?;

    let starts = Arc::new(Mutex::new(Vec::new()));
    let one = worker(queue.clone(), starts.clone())?;
    let two = worker(other.clone(), starts.clone())?;
    while queue.stats(Some(QUEUE)).await?[0].completed < 20 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    one.shutdown(Duration::from_secs(5)).await;
    two.shutdown(Duration::from_secs(5)).await;

    let mut windows: BTreeMap<i64, usize> = BTreeMap::new();
    for ms in starts.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        *windows.entry(ms.div_euclid(1000)).or_default() += 1;
    }
    let counts: Vec<String> = windows.values().map(usize::to_string).collect();
    println!(
        "20 jobs at 5 per second, two workers of 8 slots: started per one-second window {}",
        counts.join(", ")
    );
    drop((queue, other));
    let _ = std::fs::remove_file(&path);
    Ok(())
}
