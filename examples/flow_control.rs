//! Flow control: a per-customer key limit with fair shares, and a partner rate limit.
//!
//! The `sync` queue runs at most one job per customer at a time and takes turns across
//! customers. Customer `big` has 100 syncs queued when customer `small` pushes 5: `small`'s jobs
//! do not wait behind `big`'s backlog. The `partner` queue calls an API that allows 10 calls
//! per half second. One worker of 8 slots serves each queue. The example prints the most syncs
//! of one customer that ran at once, how many of `big`'s had started when `small`'s last one
//! did, and how many partner calls started in each half-second window.
//!
//! `cargo run --example flow_control` (uses a fresh file in the temporary directory; about 3 s).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dbqueue::{JobContext, JobError, NewJob, Queue, RateLimit, Worker, WorkerHandle};
use serde::{Deserialize, Serialize};

const SYNC: &str = "sync";
const PARTNER: &str = "partner";
const LEASE: Duration = Duration::from_secs(30);

#[derive(Serialize, Deserialize)]
struct Sync {
    customer: String,
}

/// What the sync handlers saw: running syncs per customer now, the most at once, and the order
/// in which the jobs started.
#[derive(Default)]
struct Seen {
    running: HashMap<String, usize>,
    most: usize,
    order: Vec<String>,
}

fn sync_worker(queue: Arc<dyn Queue>, seen: Arc<Mutex<Seen>>) -> dbqueue::Result<WorkerHandle> {
    Ok(Worker::builder(queue, SYNC)
        .concurrency(8)
        .handler_fn(move |ctx: JobContext| {
            let seen = seen.clone();
            async move {
                let job: Sync = ctx.payload()?;
                {
                    let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
                    let n = s.running.entry(job.customer.clone()).or_default();
                    *n += 1;
                    let n = *n;
                    s.most = s.most.max(n);
                    s.order.push(job.customer.clone());
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
                *s.running.entry(job.customer).or_default() -= 1;
                Ok::<(), JobError>(())
            }
        })
        .build()?
        .start())
}

fn partner_worker(
    queue: Arc<dyn Queue>,
    starts: Arc<Mutex<Vec<i64>>>,
) -> dbqueue::Result<WorkerHandle> {
    Ok(Worker::builder(queue, PARTNER)
        .concurrency(8)
        .lease(LEASE)
        .handler_fn(move |ctx: JobContext| {
            let starts = starts.clone();
            async move {
                // The start by the database's clock: the lease's expiry less the lease.
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

fn sync(customer: &str) -> dbqueue::Result<NewJob> {
    Ok(NewJob::new(
        SYNC,
        &Sync {
            customer: customer.to_owned(),
        },
    )?
    .concurrency_key(customer))
}

async fn completed(queue: &Arc<dyn Queue>, name: &str) -> dbqueue::Result<u64> {
    let stats = queue.stats(Some(name)).await?;
    Ok(stats.first().map_or(0, |s| s.completed))
}

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-flow-{}.db", std::process::id()));
    let url = format!("sqlite://{}", path.display());
    let queue = dbqueue::connect_and_migrate(&url).await?;

    // One sync per customer at a time, across every process; claims take turns across
    // customers (a key limit implies it; fair shares alone give turns without a limit).
    queue.set_key_limit(SYNC, Some(1)).await?;
    queue.set_fair_shares(SYNC, true).await?;
    // At most 10 partner calls start in each half-second window, across every process.
    queue
        .set_rate_limit(
            PARTNER,
            Some(RateLimit::new(10, Duration::from_millis(500))?),
        )
        .await?;

    let big = (0..100)
        .map(|_| sync("big"))
        .collect::<Result<Vec<_>, _>>()?;
    queue.push_batch(big).await?;
    let calls = (0..30)
        .map(|i| NewJob::new(PARTNER, &i))
        .collect::<Result<Vec<_>, _>>()?;
    queue.push_batch(calls).await?;

    let seen = Arc::new(Mutex::new(Seen::default()));
    let starts = Arc::new(Mutex::new(Vec::new()));
    let syncs = sync_worker(queue.clone(), seen.clone())?;
    let partner = partner_worker(queue.clone(), starts.clone())?;
    // `big` is being served when `small` arrives.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let small = (0..5)
        .map(|_| sync("small"))
        .collect::<Result<Vec<_>, _>>()?;
    queue.push_batch(small).await?;

    while completed(&queue, SYNC).await? < 105 || completed(&queue, PARTNER).await? < 30 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    syncs.shutdown(Duration::from_secs(5)).await;
    partner.shutdown(Duration::from_secs(5)).await;

    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    let last_small = seen.order.iter().rposition(|c| c == "small").unwrap_or(0);
    let big_before = seen.order[..last_small]
        .iter()
        .filter(|c| *c == "big")
        .count();
    println!(
        "syncs: at most {} of one customer ran at once; small's 5 jobs had all started when \
         {big_before} of big's 100 had",
        seen.most
    );
    let mut windows: BTreeMap<i64, usize> = BTreeMap::new();
    for ms in starts.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        *windows.entry(ms.div_euclid(500)).or_default() += 1;
    }
    let counts: Vec<String> = windows.values().map(usize::to_string).collect();
    println!(
        "partner: 30 calls at 10 per half second started per window {}",
        counts.join(", ")
    );
    drop(queue);
    let _ = std::fs::remove_file(&path);
    Ok(())
}
