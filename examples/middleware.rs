//! Middleware and job events: a worker whose runs go through two middleware (one that times
//! each run and adds a request id to its context, one that turns an upstream's "busy" answer
//! into a snooze), and a subscriber that prints every job event.
//!
//! `cargo run --example middleware` (uses a fresh file in the temporary directory).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dbqueue::worker::{middleware_fn, EventItem, Transition};
use dbqueue::{JobContext, JobError, NewJob, Worker};

/// A value the outer middleware adds to each run, for the handler to read.
#[derive(Clone, Debug)]
struct RequestId(u64);

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-middleware-{}.db", std::process::id()));
    let queue = dbqueue::connect_and_migrate(&format!("sqlite://{}", path.display())).await?;
    for n in 0..6 {
        queue
            .push(NewJob::new("webhooks", &serde_json::json!({ "n": n }))?)
            .await?;
    }

    let next_id = Arc::new(AtomicU64::new(1));
    let worker = Worker::builder(queue.clone(), "webhooks")
        .concurrency(2)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(200))
        // Outermost: sees the job first and the outcome last.
        .middleware(middleware_fn(move |mut ctx: JobContext, next| {
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            async move {
                ctx.extensions_mut().insert(RequestId(id));
                let started = Instant::now();
                let job = ctx.id();
                let outcome = next.run(ctx).await;
                println!(
                    "request {id}: job {job} took {:?}, ok: {}",
                    started.elapsed(),
                    outcome.is_ok()
                );
                outcome
            }
        }))
        // Inside it: an error that says the upstream is busy becomes a snooze.
        .middleware(middleware_fn(|ctx: JobContext, next| async move {
            match next.run(ctx).await {
                Err(e) if e.message().contains("busy") => {
                    Err(JobError::snooze(Duration::from_millis(50)))
                }
                other => other,
            }
        }))
        .handler_fn(|ctx: JobContext| async move {
            let request = ctx.extensions().get::<RequestId>().map_or(0, |r| r.0);
            let n = ctx.job.payload_value()["n"].as_u64().unwrap_or(0);
            // Every third job finds the upstream busy on its first run.
            if n.is_multiple_of(3) && ctx.job.snoozes == 0 {
                return Err(JobError::retryable(format!(
                    "upstream busy (request {request})"
                )));
            }
            Ok(())
        })
        .build()?;

    // Subscribed before the start, so it sees the first job's events too.
    let mut events = worker.events();
    let printer = tokio::spawn(async move {
        let mut completed = 0;
        while let Some(item) = events.recv().await {
            match item {
                EventItem::Event(e) => {
                    println!(
                        "event: job {} attempt {}: {:?}",
                        e.id, e.attempt, e.transition
                    );
                    if e.transition == Transition::Completed {
                        completed += 1;
                    }
                }
                EventItem::Lagged(n) => println!("event: {n} events lost (subscriber too slow)"),
                _ => {}
            }
        }
        completed
    });
    let handle = worker.start();

    let counters = handle.counters();
    let deadline = Instant::now() + Duration::from_secs(30);
    while counters.completed() < 6 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let report = handle.shutdown(Duration::from_secs(5)).await;
    // The subscription ends once the worker has stopped.
    let seen = match tokio::time::timeout(Duration::from_secs(5), printer).await {
        Ok(Ok(seen)) => seen,
        _ => 0,
    };
    println!(
        "{} completed, {} snoozed; the subscriber saw {seen} completions",
        report.counters.completed, report.counters.snoozed
    );
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
