//! Enqueue-to-start latency: pushes one job at a time to an idle worker, 100 times, and prints
//! the median and p99 of the time from the start of `push` to the start of the handler, and of
//! the push call alone (its commit waits for the WAL flush).
//!
//! Two runs: the producer shares the worker's queue value (woken in process), and the producer
//! is a second queue value, as another process would be (woken by NOTIFY through the worker's
//! LISTEN connection).
//!
//! ```text
//! cargo run --release -p dbqueue-postgres --example latency [postgres://...]
//! ```
//! The URL defaults to `$QUEUE_TEST_POSTGRES_URL`, then `postgres://postgres@127.0.0.1:5432/test`.
//! It works in a scratch schema that it drops at the end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dbqueue_postgres::PostgresQueue;
use queue_core::worker::{JobContext, JobError, Worker};
use queue_core::{NewJob, Queue};
use tokio::sync::mpsc;

const ROUNDS: usize = 100;

async fn measure(
    worker_queue: &PostgresQueue,
    producer: &PostgresQueue,
    queue_name: &str,
) -> queue_core::Result<(Vec<Duration>, Vec<Duration>)> {
    let (started_tx, mut started_rx) = mpsc::unbounded_channel::<Instant>();
    let handle = Worker::builder(Arc::new(worker_queue.clone()), queue_name)
        .concurrency(4)
        .prefetch(4)
        // The default adaptive poll: waiting is what the wake-up must cut short.
        .poll_interval(Duration::from_millis(50), Duration::from_secs(2))
        .handler_fn(move |_ctx: JobContext| {
            let started = Instant::now();
            let tx = started_tx.clone();
            async move {
                let _ = tx.send(started);
                Ok::<(), JobError>(())
            }
        })
        .build()?
        .start();
    // Let the worker settle into waiting (its LISTEN connection up, its poll interval long).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut latencies = Vec::with_capacity(ROUNDS);
    let mut pushes = Vec::with_capacity(ROUNDS);
    for i in 0..ROUNDS {
        let pushed = Instant::now();
        producer
            .push(NewJob::new(queue_name, &serde_json::json!({ "round": i }))?)
            .await?;
        pushes.push(pushed.elapsed());
        let started = tokio::time::timeout(Duration::from_secs(10), started_rx.recv())
            .await
            .ok()
            .flatten()
            .expect("the worker started the job within 10 s");
        latencies.push(started - pushed);
        // Idle again: the worker is back in wait_for_work when the next push arrives.
        tokio::time::sleep(Duration::from_millis(20 + fastrand::u64(0..30))).await;
    }
    handle.shutdown(Duration::from_secs(5)).await;
    latencies.sort();
    pushes.sort();
    Ok((latencies, pushes))
}

fn report(label: &str, latencies: &[Duration]) {
    let mut latencies = latencies.to_vec();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{label:<44} median {:>8.2?}  p99 {:>8.2?}  min {:>8.2?}  max {:>8.2?}",
        pct(0.5),
        pct(0.99),
        latencies[0],
        latencies[latencies.len() - 1]
    );
}

#[tokio::main]
async fn main() -> queue_core::Result<()> {
    let url = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("QUEUE_TEST_POSTGRES_URL").ok())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".into());
    let schema = format!("latency_{}", std::process::id());
    let queue = PostgresQueue::builder(&url)
        .schema(&schema)
        .connect()
        .await?;
    queue.migrate().await?;
    let other = PostgresQueue::builder(&url)
        .schema(&schema)
        .connect()
        .await?;
    println!(
        "PostgreSQL {} at {}; {ROUNDS} single pushes to an idle worker each",
        queue
            .capabilities()
            .server_version
            .as_deref()
            .unwrap_or("?"),
        queue_core::validate::redact_url(&url),
    );

    let same = measure(&queue, &queue, "latency-same").await;
    let cross = measure(&queue, &other, "latency-notify").await;

    // `schema` is a plain identifier this program made.
    let drop_schema = sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"));
    sqlx::query(drop_schema)
        .execute(queue.pool())
        .await
        .map_err(queue_core::Error::database)?;
    let (same, same_push) = same?;
    let (cross, cross_push) = cross?;
    report("push to start, same value (in-process wake)", &same);
    report("push to start, second value (NOTIFY/LISTEN)", &cross);
    report(
        "the push call alone (commit included)",
        &[same_push, cross_push].concat(),
    );
    Ok(())
}
