//! Periodic jobs: two schedulers, as two processes of one service would run them, share one
//! SQLite file and push each slot of an every-two-seconds schedule exactly once; a worker runs
//! the jobs. Then the stored schedules and the jobs per slot are printed.
//!
//! `cargo run --example periodic` (uses a fresh file in the temporary directory).

use std::collections::BTreeMap;
use std::time::Duration;

use dbqueue::periodic::{Misfire, PeriodicJob, Scheduler};
use dbqueue::{JobContext, JobError, ListRequest, Worker};

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-periodic-{}.db", std::process::id()));
    let url = format!("sqlite://{}", path.display());
    let queue = dbqueue::connect_and_migrate(&url).await?;
    // A second queue value with its own connections: what another process would have.
    let other = dbqueue::connect(&url).await?;

    // Every two seconds (six fields: seconds first), and a nightly job on Berlin's wall clock
    // that catches up at most three missed nights after an outage.
    let heartbeat = PeriodicJob::new("heartbeat", "*/2 * * * * *", "periodic", &"heartbeat")?;
    let nightly = PeriodicJob::new("nightly-report", "30 2 * * *", "reports", &"report")?
        .time_zone("Europe/Berlin")
        .misfire(Misfire::CatchUp { max: 3 });

    // Process one: a worker with the scheduler attached (it starts and stops with the worker).
    let scheduler = Scheduler::builder(queue.clone())
        .schedule(heartbeat.clone())
        .schedule(nightly.clone())
        .build()?;
    let worker = Worker::builder(queue.clone(), "periodic")
        // Jobs the other process pushes are seen at the next poll (within 200 ms here).
        .poll_interval(Duration::from_millis(10), Duration::from_millis(200))
        .handler_fn(|ctx: JobContext| async move {
            println!(
                "ran job {} for {}",
                ctx.id(),
                ctx.job.dedup_key.as_deref().unwrap_or("?")
            );
            Ok::<(), JobError>(())
        })
        .scheduler(scheduler)
        .build()?
        .start();
    // Process two: a scheduler on its own, with the same schedules. No leader is elected:
    // both try every slot, and the database lets exactly one of them enqueue it.
    let second = Scheduler::builder(other.clone())
        .schedule(heartbeat)
        .schedule(nightly)
        .build()?
        .start();

    tokio::time::sleep(Duration::from_secs(7)).await;
    second.shutdown().await;
    // Time for the worker to run the last slot's job before it stops.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let report = worker.shutdown(Duration::from_secs(5)).await;
    println!("worker completed {} jobs", report.counters.completed);

    let now = queue.now().await?;
    for s in queue.schedules().await? {
        println!(
            "schedule {}: {:?} in {}, last slot {:?} ({:?}), next slot {:?}",
            s.job.name(),
            s.job.expression(),
            s.job.time_zone_name(),
            s.last_slot,
            s.last_job_state,
            s.next_slot(now)?,
        );
    }
    let jobs = queue
        .list(ListRequest {
            queue: Some("periodic".into()),
            ..ListRequest::default()
        })
        .await?;
    let mut per_slot: BTreeMap<String, usize> = BTreeMap::new();
    for job in &jobs {
        *per_slot
            .entry(job.dedup_key.clone().unwrap_or_default())
            .or_default() += 1;
    }
    let once = per_slot.values().all(|n| *n == 1);
    println!(
        "{} slots enqueued by two schedulers, each {}",
        per_slot.len(),
        if once {
            "exactly once"
        } else {
            "MORE THAN ONCE"
        }
    );
    drop((queue, other));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
