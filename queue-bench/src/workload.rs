//! The workloads, each run on a fresh namespace for our queue and, where there is one, on a
//! fresh baseline table, by the same code paths and in the same process.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use queue_core::worker::{JobContext, JobError, Worker};
use queue_core::{JobId, NewJob, Queue};
use tokio::task::JoinSet;

use crate::backend::{BaselineNs, OursNs, Server};

/// The queue name every workload uses.
const QUEUE: &str = "bench";
/// Jobs per push while seeding a drain (not measured).
const SEED_BATCH: usize = 500;

/// What every workload is told.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Settings {
    pub(crate) jobs: u64,
    pub(crate) workers: usize,
    pub(crate) batch: usize,
    pub(crate) payload_bytes: usize,
    pub(crate) producers: usize,
    pub(crate) push_batch: usize,
    pub(crate) backlog_rows: u64,
    pub(crate) latency_rate: u32,
    pub(crate) latency_jobs: u64,
    pub(crate) baseline: bool,
    pub(crate) smoke: bool,
}

impl Settings {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.jobs == 0 || self.workers == 0 || self.batch == 0 || self.producers == 0 {
            bail!("--jobs, --workers, --batch and --producers must be at least 1");
        }
        if self.push_batch == 0 || self.latency_rate == 0 || self.latency_jobs == 0 {
            bail!("--push-batch, --latency-rate and --latency-jobs must be at least 1");
        }
        if self.batch > 1000 {
            bail!("--batch must be at most 1000 (the queue's pop limit)");
        }
        Ok(())
    }

    /// Connections in every pool, ours and the baseline's alike.
    fn pool(&self) -> u32 {
        (self.workers.max(self.producers) + 2) as u32
    }

    /// A generous bound on one workload, so a hang fails the run instead of stalling it.
    pub(crate) fn workload_timeout_secs(&self) -> u64 {
        let n = self.jobs.max(self.latency_jobs) + self.backlog_rows / 20;
        600 + n / 50
    }

    pub(crate) fn payload(&self) -> String {
        let pad = self.payload_bytes.saturating_sub(10).max(1);
        format!("{{\"pad\":\"{}\"}}", "x".repeat(pad))
    }
}

/// One workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workload {
    /// Single pushes from concurrent producers.
    Enqueue,
    /// `push_batch` from concurrent producers.
    EnqueueBatch,
    /// Pre-pushed jobs burnt down by the worker runtime with this prefetch.
    Drain { batch: usize },
    /// Jobs pushed at a fixed rate to idle workers.
    Latency,
    /// The drain on a table already holding many finished rows.
    Backlog { batch: usize },
    /// The drain by several worker processes, each with the configured slots and this prefetch.
    DrainProcesses { batch: usize, processes: usize },
    /// The drain of a queue with a global concurrency limit, compared with the unlimited drain
    /// of the same run.
    DrainLimited { batch: usize, limit: u32 },
    /// Single pushes with a uniqueness rule (every job its own key), compared with plain single
    /// pushes of the same run.
    EnqueueUnique,
    /// `stats` of a table holding `backlog_rows` completed jobs: with the default cap, compared
    /// with the exact count.
    Stats,
}

impl Workload {
    pub(crate) fn name(&self) -> String {
        match self {
            Workload::Enqueue => "enqueue".into(),
            Workload::EnqueueBatch => "enqueue-batch".into(),
            Workload::Drain { batch } => format!("drain (batch {batch})"),
            Workload::Latency => "latency".into(),
            Workload::Backlog { batch } => format!("backlog drain (batch {batch})"),
            Workload::DrainProcesses { batch, processes } => {
                format!("drain (batch {batch}, {processes} processes)")
            }
            Workload::DrainLimited { batch, limit } => {
                format!("drain of a queue limited to {limit} (batch {batch})")
            }
            Workload::EnqueueUnique => "enqueue-unique".into(),
            Workload::Stats => "stats".into(),
        }
    }
}

/// One measured run: how many jobs in how long.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Measurement {
    /// What was measured, in words.
    pub(crate) what: String,
    pub(crate) jobs: u64,
    pub(crate) seconds: f64,
    pub(crate) jobs_per_sec: f64,
}

impl Measurement {
    pub(crate) fn new(what: impl Into<String>, jobs: u64, elapsed: Duration) -> Self {
        let seconds = elapsed.as_secs_f64();
        Measurement {
            what: what.into(),
            jobs,
            seconds,
            jobs_per_sec: if seconds > 0.0 {
                jobs as f64 / seconds
            } else {
                0.0
            },
        }
    }

    pub(crate) fn rate(&self) -> f64 {
        self.jobs_per_sec
    }
}

/// Percentiles of a latency sample, in milliseconds.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Latency {
    /// Where the interval starts and ends.
    pub(crate) measured: String,
    pub(crate) samples: usize,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) max_ms: f64,
}

impl Latency {
    fn of(measured: &str, mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let pick = |q: f64| -> f64 {
            if samples.is_empty() {
                return 0.0;
            }
            let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[i].as_secs_f64() * 1e3
        };
        Latency {
            measured: measured.into(),
            samples: samples.len(),
            p50_ms: pick(0.50),
            p99_ms: pick(0.99),
            max_ms: pick(1.0),
        }
    }
}

/// What one workload produced.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct WorkloadResult {
    pub(crate) workload: String,
    /// Our queue's numbers.
    pub(crate) ours: Option<Measurement>,
    /// The comparison's numbers, measured in the same run.
    pub(crate) baseline: Option<Measurement>,
    /// ours / baseline (throughput).
    pub(crate) ratio: Option<f64>,
    pub(crate) latency: Vec<Latency>,
    /// Correctness checks that failed (a non-empty list fails the run).
    pub(crate) violations: Vec<String>,
    pub(crate) notes: Vec<String>,
}

impl WorkloadResult {
    fn new(w: Workload) -> Self {
        WorkloadResult {
            workload: w.name(),
            ours: None,
            baseline: None,
            ratio: None,
            latency: Vec::new(),
            violations: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn set_ratio(&mut self) {
        if let (Some(o), Some(b)) = (&self.ours, &self.baseline) {
            if b.rate() > 0.0 {
                self.ratio = Some(o.rate() / b.rate());
            }
        }
    }
}

/// Runs one workload; `fresh_drain` is this run's drain rate on an empty table, the backlog
/// workload's comparison.
pub(crate) async fn run(
    server: &dyn Server,
    url: Option<&str>,
    w: Workload,
    s: &Settings,
    progress: bool,
    fresh_drain: Option<f64>,
) -> Result<WorkloadResult> {
    let mut r = WorkloadResult::new(w);
    match w {
        Workload::Enqueue => {
            let ns = server.ours(s.pool()).await?;
            let out = enqueue_ours(ns.as_ref(), s, 1, progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            if s.baseline {
                let b: Arc<dyn BaselineNs> = server.baseline(s.pool()).await?.into();
                let out = enqueue_baseline(b.clone(), s, 1, progress).await;
                finish_baseline(&mut r, b.as_ref(), out).await?;
            }
        }
        Workload::EnqueueBatch => {
            let ns = server.ours(s.pool()).await?;
            let out = enqueue_ours(ns.as_ref(), s, s.push_batch, progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            if s.baseline {
                let b: Arc<dyn BaselineNs> = server.baseline(s.pool()).await?.into();
                let out = enqueue_baseline(b.clone(), s, s.push_batch, progress).await;
                finish_baseline(&mut r, b.as_ref(), out).await?;
            }
        }
        Workload::Drain { batch } => {
            let ns = server.ours(s.pool()).await?;
            let out = drain_ours(ns.as_ref(), s, batch, 0, None, progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            // Our pool's connections close before the baseline opens its own, so that both
            // together never need more than the server's connection limit.
            drop(ns);
            if s.baseline {
                let b: Arc<dyn BaselineNs> = server.baseline(s.pool()).await?.into();
                let out = drain_baseline(b.clone(), s, batch, progress).await;
                finish_baseline(&mut r, b.as_ref(), out).await?;
            }
        }
        Workload::DrainProcesses { batch, processes } => {
            let ns = server.ours(s.pool()).await?;
            let out = crate::procs::drain(server, url, ns.as_ref(), s, batch, processes).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
        }
        Workload::Backlog { batch } => {
            let ns = server.ours(s.pool()).await?;
            let out = drain_ours(ns.as_ref(), s, batch, s.backlog_rows, None, progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            if let (Some(o), Some(fresh)) = (&r.ours, fresh_drain) {
                r.baseline = Some(Measurement {
                    what: format!("the same drain on an empty table, this run (batch {batch})"),
                    jobs: 0,
                    seconds: 0.0,
                    jobs_per_sec: fresh,
                });
                r.ratio = Some(o.rate() / fresh);
            }
        }
        Workload::DrainLimited { batch, limit } => {
            let ns = server.ours(s.pool()).await?;
            let out = drain_ours(ns.as_ref(), s, batch, 0, Some(limit), progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            if let (Some(o), Some(fresh)) = (&r.ours, fresh_drain) {
                r.baseline = Some(Measurement {
                    what: format!("the unlimited drain of this run (batch {batch})"),
                    jobs: 0,
                    seconds: 0.0,
                    jobs_per_sec: fresh,
                });
                r.ratio = Some(o.rate() / fresh);
            }
        }
        Workload::EnqueueUnique => {
            let ns = server.ours(s.pool()).await?;
            let out = enqueue_ours(ns.as_ref(), s, 1, progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            let plain = r.ours.take();
            let ns = server.ours(s.pool()).await?;
            let out = enqueue_unique(ns.as_ref(), s, progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            r.baseline = plain.map(|mut m| {
                m.what = format!("plain push of this run, {} producers", s.producers);
                m
            });
        }
        Workload::Stats => {
            let ns = server.ours(s.pool()).await?;
            let exact = server
                .attach_with(
                    &ns.namespace(),
                    2,
                    queue_core::Limits {
                        stats_count_cap: None,
                        ..queue_core::Limits::default()
                    },
                )
                .await;
            let out = match exact {
                Ok(exact) => stats_ours(ns.as_ref(), exact, s).await,
                Err(e) => Err(e),
            };
            let cleaned = ns.cleanup().await;
            let (capped, exact, notes) = out?;
            cleaned?;
            r.ours = Some(capped);
            r.baseline = Some(exact);
            r.notes = notes;
        }
        Workload::Latency => {
            let ns = server.ours(s.pool()).await?;
            let out = latency_ours(ns.as_ref(), s, progress).await;
            let cleaned = ns.cleanup().await;
            let (lat, notes, violations) = out?;
            cleaned?;
            r.latency = lat;
            r.notes = notes;
            r.violations = violations;
        }
    }
    r.set_ratio();
    Ok(r)
}

pub(crate) type Outcome = Result<(Measurement, Vec<String>, Vec<String>)>;

/// Records our side's outcome and drops its namespace (even when the workload failed).
async fn finish_ours(r: &mut WorkloadResult, ns: &dyn OursNs, out: Outcome) -> Result<()> {
    let cleaned = ns.cleanup().await;
    let (m, violations, notes) = out?;
    cleaned.context("drop the namespace")?;
    r.ours = Some(m);
    r.violations
        .extend(violations.into_iter().map(|v| format!("dbqueue: {v}")));
    r.notes.extend(notes);
    Ok(())
}

async fn finish_baseline(r: &mut WorkloadResult, ns: &dyn BaselineNs, out: Outcome) -> Result<()> {
    let cleaned = ns.cleanup().await;
    let (m, violations, notes) = out?;
    cleaned.context("drop the baseline table")?;
    r.baseline = Some(m);
    r.violations
        .extend(violations.into_iter().map(|v| format!("baseline: {v}")));
    r.notes.extend(notes);
    Ok(())
}

fn bar(progress: bool, total: u64, label: String) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(
        Some(total),
        if progress {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template(
        "{msg:40} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec})",
    ) {
        pb.set_style(style);
    }
    pb.set_message(label);
    pb
}

/// Runs `total` jobs through `producers` concurrent tasks, each taking `chunk` jobs at a time
/// and calling `f(n)`; returns the wall time.
async fn produce<F, Fut>(
    total: u64,
    producers: usize,
    chunk: u64,
    pb: &ProgressBar,
    f: F,
) -> Result<Duration>
where
    F: Fn(u64) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut set = JoinSet::new();
    for _ in 0..producers {
        let next = next.clone();
        let f = f.clone();
        let pb = pb.clone();
        set.spawn(async move {
            loop {
                let from = next.fetch_add(chunk, Ordering::Relaxed);
                if from >= total {
                    return Ok::<(), anyhow::Error>(());
                }
                let n = chunk.min(total - from);
                f(n).await?;
                pb.inc(n);
            }
        });
    }
    while let Some(res) = set.join_next().await {
        res.context("producer task")??;
    }
    Ok(start.elapsed())
}

fn new_jobs(n: u64, payload: &str) -> Result<Vec<NewJob>> {
    (0..n)
        .map(|_| NewJob::from_json(QUEUE, payload).map_err(Into::into))
        .collect()
}

async fn enqueue_ours(ns: &dyn OursNs, s: &Settings, chunk: usize, progress: bool) -> Outcome {
    let q = ns.queue();
    let payload: Arc<str> = s.payload().into();
    let label = if chunk == 1 {
        format!("dbqueue push x{}", s.producers)
    } else {
        format!("dbqueue push_batch({chunk}) x{}", s.producers)
    };
    let pb = bar(progress, s.jobs, label);
    let elapsed = produce(s.jobs, s.producers, chunk as u64, &pb, move |n| {
        let q = q.clone();
        let payload = payload.clone();
        async move {
            if n == 1 {
                q.push(NewJob::from_json(QUEUE, &payload)?).await?;
            } else {
                q.push_batch(new_jobs(n, &payload)?).await?;
            }
            Ok(())
        }
    })
    .await?;
    pb.finish_and_clear();
    let check = ns.check(QUEUE).await?;
    let what = if chunk == 1 {
        format!("push, {} producers", s.producers)
    } else {
        format!("push_batch of {chunk}, {} producers", s.producers)
    };
    Ok((
        Measurement::new(what, s.jobs, elapsed),
        check.count_violations(s.jobs),
        Vec::new(),
    ))
}

async fn enqueue_baseline(
    b: Arc<dyn BaselineNs>,
    s: &Settings,
    chunk: usize,
    progress: bool,
) -> Outcome {
    let payload: Arc<str> = s.payload().into();
    let label = format!("baseline INSERT({chunk}) x{}", s.producers);
    let pb = bar(progress, s.jobs, label);
    let b2 = b.clone();
    let elapsed = produce(s.jobs, s.producers, chunk as u64, &pb, move |n| {
        let b = b2.clone();
        let payload = payload.clone();
        async move {
            if n == 1 {
                b.insert_one(&payload).await
            } else {
                let many: Vec<String> = (0..n).map(|_| payload.to_string()).collect();
                b.insert_many(&many).await
            }
        }
    })
    .await?;
    pb.finish_and_clear();
    let check = b.check().await?;
    let what = if chunk == 1 {
        format!("one INSERT per job, {} producers", s.producers)
    } else {
        format!("multi-row INSERT of {chunk}, {} producers", s.producers)
    };
    Ok((
        Measurement::new(what, s.jobs, elapsed),
        check.count_violations(s.jobs),
        Vec::new(),
    ))
}

/// Single pushes with a uniqueness rule by args, each job with args of its own (so each is
/// stored); then, in the notes, the rate of pushes that meet the job holding their key.
async fn enqueue_unique(ns: &dyn OursNs, s: &Settings, progress: bool) -> Outcome {
    let q = ns.queue();
    let pad: Arc<str> = "x".repeat(s.payload_bytes.saturating_sub(24).max(1)).into();
    let rule = queue_core::Unique::new().by_args();
    let next = Arc::new(AtomicU64::new(0));
    let pb = bar(
        progress,
        s.jobs,
        format!("dbqueue unique push x{}", s.producers),
    );
    let job = {
        let (pad, rule) = (pad.clone(), rule.clone());
        move |n: u64| -> Result<NewJob> {
            Ok(
                NewJob::from_json(QUEUE, &format!("{{\"n\":{n},\"pad\":\"{pad}\"}}"))?
                    .kind("bench")
                    .unique(rule.clone()),
            )
        }
    };
    let (q2, job2, next2) = (q.clone(), job.clone(), next.clone());
    let elapsed = produce(s.jobs, s.producers, 1, &pb, move |_| {
        let (q, job, next) = (q2.clone(), job2.clone(), next2.clone());
        async move {
            let n = next.fetch_add(1, Ordering::Relaxed);
            let outcome = q.push_outcome(job(n)?).await?;
            if !outcome.inserted() {
                bail!("push {n} met another job: {outcome:?}");
            }
            Ok(())
        }
    })
    .await?;
    pb.finish_and_clear();
    let check = ns.check(QUEUE).await?;
    // Pushes of jobs that exist already: every one meets its holder and stores nothing.
    let met = (s.jobs / 4).max(1);
    let pb = bar(progress, met, "dbqueue unique push, met".into());
    let (q3, job3) = (q.clone(), job.clone());
    let met_elapsed = produce(met, s.producers, 1, &pb, move |_| {
        let (q, job) = (q3.clone(), job3.clone());
        async move {
            let n = fastrand::u64(0..100);
            let outcome = q.push_outcome(job(n)?).await?;
            if outcome.inserted() {
                bail!("a push of job {n} was stored again");
            }
            Ok(())
        }
    })
    .await?;
    pb.finish_and_clear();
    let mut violations = check.count_violations(s.jobs);
    let after = ns.check(QUEUE).await?;
    violations.extend(after.count_violations(s.jobs));
    Ok((
        Measurement::new(
            format!("push with a uniqueness rule, {} producers", s.producers),
            s.jobs,
            elapsed,
        ),
        violations,
        vec![format!(
            "pushes that met the job holding their key: {:.0}/s ({met} pushes)",
            met as f64 / met_elapsed.as_secs_f64()
        )],
    ))
}

/// Calls of `stats` per run of the stats workload.
const STATS_CALLS: u64 = 20;

/// Fills the table with `backlog_rows` completed jobs and a thousand pending ones, then times
/// `stats` of every queue through the default cap and through `exact` (no cap).
async fn stats_ours(
    ns: &dyn OursNs,
    exact: Arc<dyn Queue>,
    s: &Settings,
) -> Result<(Measurement, Measurement, Vec<String>)> {
    let q = ns.queue();
    let payload = s.payload();
    let t = Instant::now();
    ns.fill_finished(QUEUE, s.backlog_rows, &payload)
        .await
        .context("fill the table")?;
    let mut notes = vec![format!(
        "{} completed rows inserted in {:.1} s",
        s.backlog_rows,
        t.elapsed().as_secs_f64()
    )];
    seed_ours(q.as_ref(), 1_000, &payload).await?;
    let mut timed = Vec::new();
    for (label, queue) in [("capped", q.clone()), ("exact", exact)] {
        // One call first, so that both start from a warm cache.
        let first = queue.stats(None).await?;
        let mut ms = Vec::with_capacity(STATS_CALLS as usize);
        let start = Instant::now();
        for _ in 0..STATS_CALLS {
            let t = Instant::now();
            queue.stats(None).await?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let elapsed = start.elapsed();
        ms.sort_by(f64::total_cmp);
        let completed = first.iter().map(|st| st.completed).sum::<u64>();
        notes.push(format!(
            "{label}: median {:.2} ms, slowest {:.2} ms, completed counted {completed}",
            ms[ms.len() / 2],
            ms[ms.len() - 1]
        ));
        timed.push(Measurement::new(
            format!("stats calls ({label}), {} finished rows", s.backlog_rows),
            STATS_CALLS,
            elapsed,
        ));
    }
    let exact = timed.pop().context("the exact run")?;
    let capped = timed.pop().context("the capped run")?;
    Ok((capped, exact, notes))
}

/// Pushes `n` jobs in batches (not measured).
pub(crate) async fn seed_ours(q: &dyn Queue, n: u64, payload: &str) -> Result<()> {
    let mut left = n;
    while left > 0 {
        let k = left.min(SEED_BATCH as u64);
        q.push_batch(new_jobs(k, payload)?).await?;
        left -= k;
    }
    Ok(())
}

async fn drain_ours(
    ns: &dyn OursNs,
    s: &Settings,
    batch: usize,
    backlog: u64,
    limit: Option<u32>,
    progress: bool,
) -> Outcome {
    let q = ns.queue();
    let payload = s.payload();
    let mut notes = Vec::new();
    if limit.is_some() {
        q.set_concurrency_limit(QUEUE, limit)
            .await
            .context("set the concurrency limit")?;
    }
    if backlog > 0 {
        let t = Instant::now();
        ns.fill_finished(QUEUE, backlog, &payload)
            .await
            .context("fill the backlog")?;
        notes.push(format!(
            "{backlog} completed rows inserted in {:.1} s before the drain",
            t.elapsed().as_secs_f64()
        ));
    }
    seed_ours(q.as_ref(), s.jobs, &payload)
        .await
        .context("seed the jobs")?;

    let handled = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    let pb = bar(
        progress,
        s.jobs,
        format!("dbqueue worker x{} prefetch {batch}", s.workers),
    );
    let start = Instant::now();
    // Retention off: the drain alone is measured (a filled backlog is a day old, which the
    // default rules would start deleting).
    let handle = Worker::builder(q.clone(), QUEUE)
        .retention(queue_core::Retention::off())
        .concurrency(s.workers)
        .prefetch(batch)
        .handler_fn(move |_ctx: JobContext| {
            h.fetch_add(1, Ordering::Relaxed);
            async { Ok::<(), JobError>(()) }
        })
        .build()?
        .start();
    let counters = handle.counters();
    let deadline = Duration::from_secs(s.workload_timeout_secs());
    let mut timed_out = false;
    // A limited drain is sampled in the database every 20 ms: never more jobs running than
    // the limit.
    let (mut most_running, mut samples, mut sampled) = (0u64, 0u64, Instant::now());
    while counters.completed() < s.jobs {
        if start.elapsed() > deadline {
            timed_out = true;
            break;
        }
        pb.set_position(counters.completed());
        if limit.is_some() && sampled.elapsed() >= Duration::from_millis(20) {
            let running = q
                .stats(Some(QUEUE))
                .await?
                .first()
                .map_or(0, |st| st.running);
            most_running = most_running.max(running);
            samples += 1;
            sampled = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = start.elapsed();
    pb.finish_and_clear();
    let report = handle.shutdown(Duration::from_secs(10)).await;
    if timed_out {
        bail!(
            "the worker completed {} of {} jobs in {:?}; counters {:?}",
            counters.completed(),
            s.jobs,
            elapsed,
            counters.snapshot()
        );
    }
    let check = ns.check(QUEUE).await?;
    let mut violations = check.violations(s.jobs + backlog);
    if let Some(n) = limit {
        if most_running > u64::from(n) {
            violations.push(format!(
                "{most_running} jobs were running at once under a limit of {n}"
            ));
        }
        notes.push(format!(
            "at most {most_running} jobs running in {samples} samples of the database (limit {n})"
        ));
    }
    let snap = counters.snapshot();
    if snap.completed != s.jobs {
        violations.push(format!(
            "worker counted {} completed, expected {}",
            snap.completed, s.jobs
        ));
    }
    let ran = handled.load(Ordering::Relaxed);
    if ran != s.jobs {
        violations.push(format!("the handler ran {ran} times for {} jobs", s.jobs));
    }
    if snap.retried + snap.dead + snap.lease_lost + snap.abandoned + snap.pop_errors != 0 {
        violations.push(format!("unexpected worker outcomes: {snap:?}"));
    }
    if report.aborted != 0 {
        notes.push(format!("worker shutdown: {report:?}"));
    }
    Ok((
        Measurement::new(
            format!(
                "worker runtime, {} slots, prefetch {batch}, no-op handler",
                s.workers
            ),
            s.jobs,
            elapsed,
        ),
        violations,
        notes,
    ))
}

async fn drain_baseline(
    b: Arc<dyn BaselineNs>,
    s: &Settings,
    batch: usize,
    progress: bool,
) -> Outcome {
    let payload = s.payload();
    let mut left = s.jobs;
    while left > 0 {
        let k = left.min(SEED_BATCH as u64);
        let many: Vec<String> = (0..k).map(|_| payload.clone()).collect();
        b.insert_many(&many).await.context("seed the baseline")?;
        left -= k;
    }
    let pb = bar(
        progress,
        s.jobs,
        format!("baseline claim({batch}) x{}", s.workers),
    );
    let done = Arc::new(AtomicU64::new(0));
    let total = s.jobs;
    let start = Instant::now();
    let mut set = JoinSet::new();
    for _ in 0..s.workers {
        let b = b.clone();
        let done = done.clone();
        let pb = pb.clone();
        set.spawn(async move {
            loop {
                if done.load(Ordering::Relaxed) >= total {
                    return Ok::<(), anyhow::Error>(());
                }
                let ids = b.claim(batch).await?;
                if ids.is_empty() {
                    // Everything left is claimed by other loops; they finish it.
                    if done.load(Ordering::Relaxed) >= total {
                        return Ok(());
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                b.complete(&ids).await?;
                done.fetch_add(ids.len() as u64, Ordering::Relaxed);
                pb.inc(ids.len() as u64);
            }
        });
    }
    while let Some(res) = set.join_next().await {
        res.context("baseline worker task")??;
    }
    let elapsed = start.elapsed();
    pb.finish_and_clear();
    let check = b.check().await?;
    let what = if batch == 1 {
        format!("claim 1 + UPDATE done, {} loops", s.workers)
    } else {
        format!("claim {batch} + one UPDATE done, {} loops", s.workers)
    };
    Ok((
        Measurement::new(what, s.jobs, elapsed),
        check.violations(s.jobs),
        Vec::new(),
    ))
}

async fn latency_ours(
    ns: &dyn OursNs,
    s: &Settings,
    progress: bool,
) -> Result<(Vec<Latency>, Vec<String>, Vec<String>)> {
    let q = ns.queue();
    let payload = s.payload();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(JobId, Instant)>();
    // Retention off: the drain alone is measured (a filled backlog is a day old, which the
    // default rules would start deleting).
    let handle = Worker::builder(q.clone(), QUEUE)
        .retention(queue_core::Retention::off())
        .concurrency(s.workers)
        .prefetch(s.batch)
        .handler_fn(move |ctx: JobContext| {
            let _ = tx.send((ctx.id(), Instant::now()));
            async { Ok::<(), JobError>(()) }
        })
        .build()?
        .start();
    // Let the worker find the queue empty and go idle first.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let pb = bar(
        progress,
        s.latency_jobs,
        format!("dbqueue push at {}/s", s.latency_rate),
    );
    let mut pushed: HashMap<JobId, (Instant, Instant)> = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(s.latency_rate)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut push_times = Vec::new();
    for _ in 0..s.latency_jobs {
        tick.tick().await;
        let t0 = Instant::now();
        let id = q.push(NewJob::from_json(QUEUE, &payload)?).await?;
        let t1 = Instant::now();
        push_times.push(t1 - t0);
        pushed.insert(id, (t0, t1));
        pb.inc(1);
    }
    let mut started: HashMap<JobId, Instant> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while started.len() < pushed.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some((id, at))) => {
                if started.insert(id, at).is_some() {
                    bail!("job {id} was started twice");
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
    pb.finish_and_clear();
    let report = handle.shutdown(Duration::from_secs(10)).await;
    let mut violations = Vec::new();
    if started.len() != pushed.len() {
        violations.push(format!(
            "{} of {} pushed jobs started within 30 s of the last push",
            started.len(),
            pushed.len()
        ));
    }
    let check = ns.check(QUEUE).await?;
    violations.extend(check.violations(s.latency_jobs));
    let mut call = Vec::new();
    let mut commit = Vec::new();
    let mut early = 0;
    for (id, at) in &started {
        let Some((t0, t1)) = pushed.get(id) else {
            bail!("the handler ran job {id}, which this run never pushed");
        };
        call.push(at.saturating_duration_since(*t0));
        if *at < *t1 {
            early += 1;
        }
        commit.push(at.saturating_duration_since(*t1));
    }
    let mut notes = vec![format!(
            "{} slots, prefetch {}; producer and worker share one queue value; {} jobs started before their push call returned (counted as 0 in push-return latency)",
        s.workers, s.batch, early
    )];
    if report.aborted != 0 {
        notes.push(format!("worker shutdown: {report:?}"));
    }
    Ok((
        vec![
            Latency::of("push call -> handler start (client clock)", call),
            Latency::of("push return -> handler start (client clock)", commit),
            Latency::of("push call duration", push_times),
        ],
        notes,
        violations,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let l = Latency::of("x", samples);
        assert_eq!(l.samples, 100);
        assert_eq!(l.p50_ms, 50.0);
        assert_eq!(l.p99_ms, 99.0);
        assert_eq!(l.max_ms, 100.0);
        let empty = Latency::of("x", Vec::new());
        assert_eq!(empty.max_ms, 0.0);
    }

    #[test]
    fn payload_has_about_the_asked_size_and_is_json() {
        let s = Settings {
            jobs: 1,
            workers: 1,
            batch: 1,
            payload_bytes: 64,
            producers: 1,
            push_batch: 1,
            backlog_rows: 0,
            latency_rate: 1,
            latency_jobs: 1,
            baseline: true,
            smoke: false,
        };
        let p = s.payload();
        assert_eq!(p.len(), 64);
        assert!(serde_json::from_str::<serde_json::Value>(&p).is_ok());
    }

    #[test]
    fn ratio_is_ours_over_baseline() {
        let mut r = WorkloadResult::new(Workload::Enqueue);
        r.ours = Some(Measurement::new("a", 100, Duration::from_secs(1)));
        r.baseline = Some(Measurement::new("b", 200, Duration::from_secs(1)));
        r.set_ratio();
        assert_eq!(r.ratio, Some(0.5));
    }
}
