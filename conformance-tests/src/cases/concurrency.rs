//! Many poppers at once: every job delivered exactly once.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{ensure, Context as _};
use queue_core::{JobId, JobState, ListRequest, PopRequest};
use serde_json::json;

use super::job;
use crate::Ctx;

/// Jobs in the case.
const TOTAL: usize = 2_000;
/// Jobs pushed before the poppers start; the rest arrive while they run.
const PRELOAD: usize = 500;

/// The harness's number of poppers (16 or more), half of them through a second queue value
/// (another pool, as another process), claim 2,000 jobs while a producer keeps pushing; every
/// job is delivered exactly once and ends completed in the database.
pub async fn concurrent_poppers_exactly_once(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let q2 = fx.another().await?;
    let poppers = ctx.harness().poppers().max(16);

    let mut pushed: Vec<JobId> = Vec::with_capacity(TOTAL);
    for chunk in 0..PRELOAD / 100 {
        let jobs = (0..100)
            .map(|i| job("hot", json!({ "n": chunk * 100 + i })))
            .collect();
        pushed.extend(q.push_batch(jobs).await?);
    }
    let done = Arc::new(AtomicBool::new(false));
    let producer = {
        let q = q.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let mut ids = Vec::new();
            let mut n = PRELOAD;
            while n < TOTAL {
                let size = if n.is_multiple_of(3) { 1 } else { 40 }.min(TOTAL - n);
                let jobs: Vec<_> = (0..size)
                    .map(|i| job("hot", json!({ "n": n + i })))
                    .collect();
                if size == 1 {
                    ids.push(q.push(jobs.into_iter().next().expect("one job")).await?);
                } else {
                    ids.extend(q.push_batch(jobs).await?);
                }
                n += size;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            done.store(true, Ordering::SeqCst);
            anyhow::Ok(ids)
        })
    };

    let claimed: Arc<Mutex<Vec<JobId>>> = Arc::default();
    let mut tasks = Vec::new();
    for p in 0..poppers {
        let qv = if p % 2 == 0 { q.clone() } else { q2.clone() };
        let done = done.clone();
        let claimed = claimed.clone();
        tasks.push(tokio::spawn(async move {
            let limit = [1, 5, 10][p % 3];
            let worker = format!("popper-{p}");
            loop {
                // Read the flag before popping: an empty pop after the producer finished means
                // every job has been claimed.
                let finished = done.load(Ordering::SeqCst);
                let got = qv
                    .pop(
                        PopRequest::new("hot")
                            .limit(limit)
                            .lease(Duration::from_secs(60))
                            .worker(&worker),
                    )
                    .await
                    .with_context(|| format!("{worker} pop"))?;
                if got.is_empty() {
                    if finished {
                        return anyhow::Ok(());
                    }
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    continue;
                }
                claimed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(got.iter().map(|l| l.job.id));
                if p % 2 == 0 {
                    for l in &got {
                        qv.ack(&l.lease)
                            .await
                            .with_context(|| format!("{worker} ack"))?;
                    }
                } else {
                    let leases: Vec<_> = got.iter().map(|l| l.lease.clone()).collect();
                    let n = qv
                        .ack_batch(&leases)
                        .await
                        .with_context(|| format!("{worker} ack_batch"))?;
                    anyhow::ensure!(
                        n == leases.len() as u64,
                        "{worker}: ack_batch of live leases completed {n} of {}",
                        leases.len()
                    );
                }
            }
        }));
    }
    let run = async {
        pushed.extend(producer.await.context("producer panicked")??);
        for t in tasks {
            t.await.context("popper panicked")??;
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .context("poppers did not finish within 120 s")??;

    let claimed = std::mem::take(&mut *claimed.lock().unwrap_or_else(|e| e.into_inner()));
    let unique: HashSet<JobId> = claimed.iter().copied().collect();
    ensure!(pushed.len() == TOTAL, "pushed {} jobs", pushed.len());
    ensure!(
        unique.len() == claimed.len(),
        "{} deliveries but {} distinct jobs: some job was delivered twice",
        claimed.len(),
        unique.len()
    );
    let expected: HashSet<JobId> = pushed.iter().copied().collect();
    let missing = expected.difference(&unique).count();
    let extra = unique.difference(&expected).count();
    ensure!(
        missing == 0 && extra == 0,
        "{missing} jobs never delivered, {extra} unknown jobs delivered"
    );
    let s = q.stats(Some("hot")).await?;
    ensure!(s.len() == 1, "{s:?}");
    let s = &s[0];
    ensure!(
        s.completed == TOTAL as u64 && s.running == 0 && s.available == 0 && s.scheduled == 0,
        "stats after the run: {s:?}"
    );
    let running = q
        .list(ListRequest {
            queue: Some("hot".into()),
            state: Some(JobState::Running),
            limit: 10,
            before: None,
            kind: None,
        })
        .await?;
    ensure!(running.is_empty());
    let sample = q
        .get(pushed[TOTAL / 2])
        .await?
        .context("a delivered job is missing")?;
    ensure!(
        sample.state == JobState::Completed && sample.attempts == 1,
        "{sample:?}"
    );
    Ok(())
}

/// Short leases, slow holders and a busy rescuer: leases expire while their holders still work,
/// so claims, acks, failures and rescues race on the same rows. Every job still completes
/// exactly once (one successful ack per job), stale holders get `LeaseLost`, and no lock
/// conflict or other error surfaces.
pub async fn expiring_leases_under_a_busy_rescuer(ctx: Ctx) -> anyhow::Result<()> {
    const JOBS: u64 = 300;
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    q.push_batch(
        (0..JOBS)
            .map(|n| job("chaos", json!(n)).max_attempts(1_000))
            .collect(),
    )
    .await?;
    let stop = Arc::new(AtomicBool::new(false));
    let rescuer = {
        let q = q.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                q.rescue_expired().await?;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            anyhow::Ok(())
        })
    };
    let poppers: Vec<_> = (0..12)
        .map(|w: usize| {
            let q = q.clone();
            tokio::spawn(async move {
                let mut done = Vec::new();
                let mut idle = 0;
                while idle < 40 {
                    let got = q
                        .pop(
                            PopRequest::new("chaos")
                                .limit(1 + w % 4)
                                .lease(Duration::from_millis(40)),
                        )
                        .await?;
                    if got.is_empty() {
                        idle += 1;
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                    idle = 0;
                    for l in got {
                        // Some holders are too slow for their lease.
                        tokio::time::sleep(Duration::from_millis(fastrand::u64(0..60))).await;
                        let acked = if fastrand::u8(0..5) == 0 {
                            q.fail(
                                &l.lease,
                                queue_core::Failure::retry_after("again", Duration::ZERO),
                            )
                            .await
                            .map(|_| false)
                        } else {
                            q.ack(&l.lease).await.map(|()| true)
                        };
                        match acked {
                            Ok(true) => done.push(l.job.id),
                            Ok(false) | Err(queue_core::Error::LeaseLost { .. }) => {}
                            Err(e) => return Err(anyhow::Error::new(e).context("unexpected error")),
                        }
                    }
                }
                anyhow::Ok(done)
            })
        })
        .collect();
    let mut completed = Vec::new();
    for p in poppers {
        completed.extend(p.await??);
    }
    stop.store(true, Ordering::SeqCst);
    rescuer.await??;
    let distinct: HashSet<JobId> = completed.iter().copied().collect();
    ensure!(distinct.len() == completed.len(), "a job was acked twice");
    ensure!(
        completed.len() as u64 == JOBS,
        "{} of {JOBS} jobs completed",
        completed.len()
    );
    let s = &q.stats(Some("chaos")).await?[0];
    ensure!(
        s.completed == JOBS && s.running == 0 && s.available == 0,
        "{s:?}"
    );
    Ok(())
}
