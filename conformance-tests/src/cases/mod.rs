//! The catalogue of behaviour cases. Each case takes a [`Ctx`](crate::Ctx), makes its own
//! isolated queue(s), and checks what is stored in the database afterwards, not just what the
//! calls returned.

pub mod admin;
pub mod basic;
pub mod cancel;
pub mod concurrency;
pub mod controls;
pub mod dedup;
pub mod events;
pub mod keys;
pub mod kinds;
pub mod leases;
pub mod lifecycle;
pub mod maintenance;
pub mod middleware;
pub mod positions;
pub mod runtime_queue;
pub mod schedules;
pub mod transactions;
pub mod unique;
pub mod validation;
pub mod wait;
pub mod wakeups;
pub mod worker;
pub mod workflow_ops;
pub mod workflows;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use queue_core::{Error, Job, JobId, JobState, Leased, ListRequest, NewJob, PopRequest, Queue};

use crate::Fixture;

/// The lease most cases take: long enough never to expire by itself during a case.
pub const LONG_LEASE: Duration = Duration::from_secs(30);
/// A lease short enough to expire within a case.
pub const SHORT_LEASE: Duration = Duration::from_millis(250);

/// A job for `queue` with `payload`.
pub fn job(queue: &str, payload: serde_json::Value) -> NewJob {
    NewJob::new(queue, &payload).expect("a JSON value always serializes")
}

/// A fixture whose batches may hold 5,001 jobs, and such a batch for `queue`, whose last job
/// has the dedup key `key`: more jobs than any dialect writes with one statement (PostgreSQL
/// writes 5,000), due in an hour (so not one PostgreSQL COPY).
pub async fn large_batch(
    ctx: &crate::Ctx,
    queue: &str,
    key: &str,
) -> anyhow::Result<(Arc<dyn Fixture>, Vec<NewJob>)> {
    const JOBS: usize = 5_001;
    let mut config = ctx.config();
    config.limits.max_batch = JOBS;
    let fx = ctx.fixture_with(config).await?;
    let mut jobs: Vec<NewJob> = (1..JOBS)
        .map(|i| job(queue, serde_json::json!(i)).delay(Duration::from_secs(3600)))
        .collect();
    jobs.push(job(queue, serde_json::json!("last")).dedup_key(key));
    Ok((fx, jobs))
}

/// Fails unless job `id` is the only job stored.
pub async fn expect_only_job(q: &Arc<dyn Queue>, id: JobId) -> anyhow::Result<()> {
    let jobs = all_jobs(q).await?;
    anyhow::ensure!(
        jobs.len() == 1 && jobs[0].id == id,
        "{} jobs stored, not only {id}",
        jobs.len()
    );
    Ok(())
}

/// Pops up to `limit` jobs from `queue` with `lease` as worker `worker`.
pub async fn pop(
    q: &Arc<dyn Queue>,
    queue: &str,
    limit: usize,
    lease: Duration,
    worker: &str,
) -> anyhow::Result<Vec<Leased>> {
    q.pop(
        PopRequest::new(queue)
            .limit(limit)
            .lease(lease)
            .worker(worker),
    )
    .await
    .with_context(|| format!("pop {limit} from {queue}"))
}

/// Pops exactly one job from `queue` (long lease), failing when there is none.
pub async fn pop_one(q: &Arc<dyn Queue>, queue: &str) -> anyhow::Result<Leased> {
    let mut got = pop(q, queue, 1, LONG_LEASE, "w1").await?;
    match got.len() {
        1 => Ok(got.remove(0)),
        n => bail!("expected one job from {queue}, popped {n}"),
    }
}

/// Reads a job that must exist.
pub async fn get(q: &Arc<dyn Queue>, id: JobId) -> anyhow::Result<Job> {
    q.get(id)
        .await
        .with_context(|| format!("get {id}"))?
        .ok_or_else(|| anyhow!("job {id} is not stored"))
}

/// Asserts the stored state of `id`.
pub async fn expect_state(q: &Arc<dyn Queue>, id: JobId, state: JobState) -> anyhow::Result<Job> {
    let j = get(q, id).await?;
    anyhow::ensure!(
        j.state == state,
        "job {id}: expected state {state}, stored {}",
        j.state
    );
    Ok(j)
}

/// Every stored job (at most 1000), newest first.
pub async fn all_jobs(q: &Arc<dyn Queue>) -> anyhow::Result<Vec<Job>> {
    Ok(q.list(ListRequest {
        queue: None,
        state: None,
        limit: 1000,
        before: None,
        kind: None,
    })
    .await?)
}

/// The field named by an [`Error::InvalidInput`], or a description of the wrong outcome.
pub fn invalid_field<T: std::fmt::Debug>(r: &queue_core::Result<T>) -> Result<String, String> {
    match r {
        Err(Error::InvalidInput { field, .. }) => Ok(field.clone()),
        other => Err(format!("{other:?}")),
    }
}

/// Fails unless `r` is [`Error::LeaseLost`] for `id`.
pub fn expect_lease_lost<T: std::fmt::Debug>(
    what: &str,
    id: JobId,
    r: queue_core::Result<T>,
) -> anyhow::Result<()> {
    match r {
        Err(Error::LeaseLost { job }) if job == id => Ok(()),
        other => bail!("{what}: expected LeaseLost for {id}, got {other:?}"),
    }
}

/// Fails unless `r` is [`Error::Cancelled`] for `id`.
pub fn expect_cancelled<T: std::fmt::Debug>(
    what: &str,
    id: JobId,
    r: queue_core::Result<T>,
) -> anyhow::Result<()> {
    match r {
        Err(Error::Cancelled { job }) if job == id => Ok(()),
        other => bail!("{what}: expected Cancelled for {id}, got {other:?}"),
    }
}

/// The fields of a row that a fenced-off call must not change.
pub fn row_fingerprint(j: &Job) -> String {
    format!(
        "state={} attempts={} max={} priority={} run_at={:?} lease_expires_at={:?} worker={:?} last_error={:?} kind={:?} meta={:?} timeout={:?} snoozes={} errors={:?} output={:?} updated_at={:?} finished_at={:?}",
        j.state,
        j.attempts,
        j.max_attempts,
        j.priority,
        j.run_at,
        j.lease_expires_at,
        j.worker,
        j.last_error,
        j.kind,
        j.meta.as_deref().map(|m| m.get()),
        j.timeout,
        j.snoozes,
        j.errors,
        j.output.as_deref().map(|o| o.get()),
        j.updated_at,
        j.finished_at
    )
}

/// Sleeps until the database clock has passed `at` (plus a margin for clock precision).
pub async fn sleep_until_db(
    q: &Arc<dyn Queue>,
    at: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    let margin = q.capabilities().time_precision + Duration::from_millis(20);
    for _ in 0..200 {
        let now = q.now().await?;
        if now > at {
            tokio::time::sleep(margin).await;
            return Ok(());
        }
        let left = (at - now).to_std().unwrap_or(Duration::ZERO) + margin;
        tokio::time::sleep(left.min(Duration::from_secs(2))).await;
    }
    bail!("the database clock never passed {at}")
}

/// Ends a case whose retention rules are seconds long where the queue under test refuses
/// rules that short ([`Fixture::retention_floor`]: PostgreSQL with finished partitions): it
/// shows as ignored, with why.
pub fn seconds_of_retention(ctx: &crate::Ctx, fx: &dyn crate::Fixture) -> anyhow::Result<()> {
    match fx.retention_floor() {
        Some(floor) => Err(ctx.skip(&format!(
            "retention rules of seconds are refused here (the shortest is {} s, a finished \
             partition): retention by partitions has cases of its own",
            floor.as_secs()
        ))),
        None => Ok(()),
    }
}

/// Polls `check` every 50 ms until it returns `Some`, or fails after `within`.
pub async fn eventually<T, F, Fut>(within: Duration, what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let t = std::time::Instant::now();
    loop {
        if let Some(v) = check().await? {
            return Ok(v);
        }
        if t.elapsed() > within {
            bail!("{what}: not within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A claimed job and its start, by the database's clock (its lease's expiry less the lease).
pub type Started = (queue_core::JobId, chrono::DateTime<chrono::Utc>);

/// 64 concurrent claimers, alternating between two queue values (two pools, as two processes
/// have), each popping 1, 2 or 5 jobs of `queue` at a time under [`LONG_LEASE`], holding them
/// 4 ms and acknowledging them, until `total` jobs were completed or `within` passed. Every
/// claimed job, with its start.
pub async fn run_64_claimers(
    q: &Arc<dyn Queue>,
    q2: &Arc<dyn Queue>,
    queue: &str,
    total: usize,
    within: Duration,
) -> anyhow::Result<Vec<Started>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let claimed: Arc<Mutex<Vec<Started>>> = Arc::default();
    let completed = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for p in 0..64usize {
        let qv = if p % 2 == 0 { q.clone() } else { q2.clone() };
        let claimed = claimed.clone();
        let completed = completed.clone();
        let queue = queue.to_owned();
        tasks.push(tokio::spawn(async move {
            let worker = format!("claimer-{p}");
            while completed.load(Ordering::SeqCst) < total {
                let got = qv
                    .pop(
                        queue_core::PopRequest::new(&queue)
                            .limit([1, 2, 5][p % 3])
                            .lease(LONG_LEASE)
                            .worker(&worker),
                    )
                    .await
                    .map_err(|e| anyhow::anyhow!("{worker} pop: {e}"))?;
                if got.is_empty() {
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    continue;
                }
                {
                    let mut c = claimed.lock().unwrap_or_else(|e| e.into_inner());
                    for l in &got {
                        let start = l.lease.expires_at - chrono::Duration::from_std(LONG_LEASE)?;
                        c.push((l.job.id, start));
                    }
                }
                tokio::time::sleep(Duration::from_millis(4)).await;
                let leases: Vec<_> = got.iter().map(|l| l.lease.clone()).collect();
                let n = qv.ack_batch(&leases).await?;
                anyhow::ensure!(
                    n == leases.len() as u64,
                    "{worker}: acked {n} of {}",
                    leases.len()
                );
                completed.fetch_add(got.len(), Ordering::SeqCst);
            }
            anyhow::Ok(())
        }));
    }
    let run = async {
        for t in tasks {
            t.await
                .map_err(|e| anyhow::anyhow!("claimer panicked: {e}"))??;
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(within, run)
        .await
        .map_err(|_| anyhow::anyhow!("the claimers did not finish within {within:?}"))??;
    let claimed = claimed.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(claimed)
}
