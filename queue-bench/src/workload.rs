//! The workloads, each run on a fresh namespace for our queue and, where there is one, on a
//! fresh baseline table, by the same code paths and in the same process.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use queue_core::worker::{JobContext, JobError, Worker, WorkerBuilder};
use queue_core::{JobId, NewJob, Queue, RateLimit};
use tokio::task::JoinSet;

use crate::backend::{kept_after_completion, BaselineNs, OursNs, Server, DAY};

mod workflow;

/// The queue name every workload uses.
const QUEUE: &str = "bench";
/// Jobs per push while seeding a drain (not measured).
const SEED_BATCH: usize = 500;
/// The lease of every worker of the drains, so that a job's start is its lease's expiry less
/// this (both by the database's clock).
const LEASE: Duration = Duration::from_secs(30);
/// How often a drain with a limit reads `stats` to check it.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// The fairness workload: the key of the deep backlog and the key of the late jobs.
const KEY_A: &str = "a";
const KEY_B: &str = "b";
/// The fairness workload: how many jobs key B pushes once the drain of key A has started, and
/// their kind (which tells the handler they are B's).
pub(crate) const LATE_JOBS: u64 = 100;
const LATE_KIND: &str = "late";

/// The prefetch of a drain's worker: the worker's own claim sizing (its default, what a user
/// who sets nothing gets), or a fixed bound (`--batch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) enum Prefetch {
    /// The worker's defaults.
    Auto,
    /// `prefetch(n)`.
    Max(usize),
}

impl Prefetch {
    /// The worker builder with this prefetch.
    pub(crate) fn apply(self, b: WorkerBuilder) -> WorkerBuilder {
        match self {
            Prefetch::Auto => b,
            Prefetch::Max(n) => b.prefetch(n),
        }
    }

    /// The claim size of the hand-written baseline beside a drain with this prefetch (100
    /// beside the worker's own sizing).
    pub(crate) fn baseline(self) -> usize {
        match self {
            Prefetch::Auto => 100,
            Prefetch::Max(n) => n,
        }
    }
}

impl std::fmt::Display for Prefetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Prefetch::Auto => f.write_str("auto"),
            Prefetch::Max(n) => write!(f, "{n}"),
        }
    }
}

/// What every workload is told.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Settings {
    pub(crate) jobs: u64,
    pub(crate) workers: usize,
    pub(crate) batch: Prefetch,
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
        if self.jobs == 0 || self.workers == 0 || self.producers == 0 {
            bail!("--jobs, --workers and --producers must be at least 1");
        }
        if self.push_batch == 0 || self.latency_rate == 0 || self.latency_jobs == 0 {
            bail!("--push-batch, --latency-rate and --latency-jobs must be at least 1");
        }
        if let Prefetch::Max(n) = self.batch {
            if !(1..=1000).contains(&n) {
                bail!("--batch must be between 1 and 1000 (the queue's pop limit)");
            }
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
    Drain { batch: Prefetch },
    /// Jobs pushed at a fixed rate to idle workers.
    Latency,
    /// The drain on a table already holding many finished rows.
    Backlog { batch: Prefetch },
    /// The drain by several worker processes, each with the configured slots and this prefetch.
    DrainProcesses { batch: Prefetch, processes: usize },
    /// The drain of a queue with a global concurrency limit, compared with the unlimited drain
    /// of the same run.
    DrainLimited { batch: Prefetch, limit: u32 },
    /// The drain of jobs spread round-robin over `keys` concurrency keys, each key limited to
    /// `key_limit` live leases, compared with the unlimited drain of the same run.
    DrainKeyed {
        batch: Prefetch,
        keys: u32,
        key_limit: u32,
    },
    /// The drain of a queue with a rate limit, compared with the configured rate (and, in the
    /// notes, with the unlimited drain of the same run).
    DrainRate { batch: Prefetch, rate: RateLimit },
    /// A deep backlog of key A drained with fair shares; [`LATE_JOBS`] jobs of key B pushed once
    /// the drain started: how long B's jobs wait, beside the same drain without fair shares.
    Fairness { batch: Prefetch },
    /// Single pushes with a uniqueness rule (every job its own key), compared with plain single
    /// pushes of the same run.
    EnqueueUnique,
    /// `stats` of a table holding `backlog_rows` completed jobs: with the default cap, compared
    /// with the exact count.
    Stats,
    /// Fan-out / fan-in workflows of `size` jobs each (a root, `size - 2` middles after it, a
    /// join after all of them), as many as fit in the jobs (at least one), pushed and then
    /// drained with this prefetch; compared with the plain drain of the same run.
    Workflow { batch: Prefetch, size: u64 },
    /// Producers push (in batches) while the worker drains, for `seconds`, the backlog kept
    /// near [`SUSTAINED_BACKLOG`] jobs; the rate of completions per [`SUSTAINED_WINDOW`], so
    /// that a drop as the table and its indexes grow, or while autovacuum runs, shows.
    Sustained { batch: Prefetch, seconds: u64 },
    /// The drain with another client's snapshot held in the same database for the whole of it
    /// (cleanup of old row versions held back), beside the same drain without it.
    Horizon { batch: Prefetch },
    /// A history of `backlog_rows` completed jobs spread over days, a tenth of it past the
    /// retention rule ([`HISTORY_RULE`]): the drain, then the drain again with one retention
    /// round deleting that tenth beside it; how long the round took and the second drain's
    /// rate beside the first's.
    RetentionAtScale { batch: Prefetch },
}

/// The queue of the retention workload's history (the drains use [`QUEUE`]).
const HISTORY: &str = "history";
/// The retention workload's rule: completed jobs are deleted 10.5 days after they finished.
/// The history's jobs finished 1 to 10 days ago or 12 to 13 days ago, so that which of them a
/// round deletes does not depend on when it runs, also with daily finished partitions (the
/// day that holds the job of 12 days ago ended 11 days ago at the latest, and the one that
/// holds that of 10 days ago ends after the rule).
const HISTORY_RULE: Duration = Duration::from_secs(252 * 3600);

/// The rules of the retention workload's round.
fn history_retention() -> queue_core::Retention {
    queue_core::Retention::off().delete_after(queue_core::JobState::Completed, HISTORY_RULE)
}

/// The sustained workload's window of counting.
const SUSTAINED_WINDOW: Duration = Duration::from_secs(10);
/// The sustained workload's backlog: producers stop pushing while this many jobs wait.
const SUSTAINED_BACKLOG: u64 = 20_000;

impl Workload {
    pub(crate) fn name(&self) -> String {
        match self {
            Workload::Enqueue => "enqueue".into(),
            Workload::EnqueueBatch => "enqueue-batch".into(),
            Workload::Drain { batch } => format!("drain (prefetch {batch})"),
            Workload::Latency => "latency".into(),
            Workload::Backlog { batch } => format!("backlog drain (batch {batch})"),
            Workload::DrainProcesses { batch, processes } => {
                format!("drain (batch {batch}, {processes} processes)")
            }
            Workload::DrainLimited { batch, limit } => {
                format!("drain of a queue limited to {limit} (batch {batch})")
            }
            Workload::DrainKeyed {
                batch,
                keys,
                key_limit,
            } => {
                format!("drain of {keys} keys limited to {key_limit} each (batch {batch})")
            }
            Workload::DrainRate { batch, rate } => format!(
                "drain limited to {} starts per {} ms (batch {batch})",
                rate.limit,
                rate.period.as_millis()
            ),
            Workload::Fairness { batch } => {
                format!("fairness: {LATE_JOBS} late jobs of key B behind key A (batch {batch})")
            }
            Workload::EnqueueUnique => "enqueue-unique".into(),
            Workload::Stats => "stats".into(),
            Workload::Workflow { batch, size } => {
                format!("workflow: fan-out/fan-in of {size} jobs (batch {batch})")
            }
            Workload::Sustained { batch, seconds } => {
                format!("sustained push and drain for {seconds} s (prefetch {batch})")
            }
            Workload::Horizon { batch } => {
                format!("drain with a snapshot held (prefetch {batch})")
            }
            Workload::RetentionAtScale { batch } => {
                format!("drain beside a retention round (prefetch {batch})")
            }
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
        let pick =
            |q: f64| -> f64 { nearest_rank(&samples, q).map_or(0.0, |d| d.as_secs_f64() * 1e3) };
        Latency {
            measured: measured.into(),
            samples: samples.len(),
            p50_ms: pick(0.50),
            p99_ms: pick(0.99),
            max_ms: pick(1.0),
        }
    }
}

/// The `q` quantile of sorted `samples` by the nearest rank; `None` when there are none.
fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[i])
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
        Workload::Horizon { batch } => {
            let mut plain = WorkloadResult::new(w);
            let ns = server.ours(s.pool()).await?;
            let out = drain_ours(ns.as_ref(), s, batch, 0, Controls::NONE, progress).await;
            finish_ours(&mut plain, ns.as_ref(), out).await?;
            let ns = server.ours(s.pool()).await?;
            let Some(mut hold) = ns.hold_horizon().await? else {
                ns.cleanup().await?;
                r.notes.push(format!(
                    "{}: no snapshot holds back cleanup on this database; not measured",
                    server.kind().name()
                ));
                return Ok(r);
            };
            let out = drain_ours(ns.as_ref(), s, batch, 0, Controls::NONE, progress).await;
            let unremovable = hold.unremovable().await;
            hold.release().await?;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            r.notes.push(unremovable?);
            if let Some(mut p) = plain.ours {
                p.what =
                    format!("the same drain without the snapshot, this run (prefetch {batch})");
                r.baseline = Some(p);
                r.set_ratio();
            }
            r.violations.extend(plain.violations);
        }
        Workload::RetentionAtScale { batch } => {
            let ns = server.ours(s.pool()).await?;
            let out = retention_at_scale(ns.as_ref(), s, batch, progress, &mut r).await;
            let cleaned = ns.cleanup().await;
            out?;
            cleaned.context("drop the namespace")?;
        }
        Workload::Sustained { batch, seconds } => {
            let ns = server.ours(s.pool()).await?;
            let out = sustained_ours(ns.as_ref(), s, batch, seconds, progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
        }
        Workload::Drain { batch } => {
            let ns = server.ours(s.pool()).await?;
            let out = drain_ours(ns.as_ref(), s, batch, 0, Controls::NONE, progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            // Our pool's connections close before the baseline opens its own, so that both
            // together never need more than the server's connection limit.
            drop(ns);
            if s.baseline {
                let b: Arc<dyn BaselineNs> = server.baseline(s.pool()).await?.into();
                let out = drain_baseline(b.clone(), s, batch.baseline(), progress).await;
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
            let out = drain_ours(
                ns.as_ref(),
                s,
                batch,
                s.backlog_rows,
                Controls::NONE,
                progress,
            )
            .await;
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
            let controls = Controls {
                limit: Some(limit),
                ..Controls::NONE
            };
            let out = drain_ours(ns.as_ref(), s, batch, 0, controls, progress).await;
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
        Workload::DrainKeyed {
            batch,
            keys,
            key_limit,
        } => {
            let ns = server.ours(s.pool()).await?;
            let controls = Controls {
                keys: Some(KeySpread { keys, key_limit }),
                ..Controls::NONE
            };
            let out = drain_ours(ns.as_ref(), s, batch, 0, controls, progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            if let (Some(o), Some(fresh)) = (&r.ours, fresh_drain) {
                r.baseline = Some(Measurement {
                    what: format!("the drain of this run without keys (batch {batch})"),
                    jobs: 0,
                    seconds: 0.0,
                    jobs_per_sec: fresh,
                });
                r.ratio = Some(o.rate() / fresh);
            }
        }
        Workload::DrainRate { batch, rate } => {
            let ns = server.ours(s.pool()).await?;
            let controls = Controls {
                rate: Some(rate),
                ..Controls::NONE
            };
            let out = drain_ours(ns.as_ref(), s, batch, 0, controls, progress).await;
            finish_ours(&mut r, ns.as_ref(), out).await?;
            let allowed = per_second(rate);
            r.baseline = Some(Measurement {
                what: format!(
                    "the configured rate, {} per {} ms",
                    rate.limit,
                    rate.period.as_millis()
                ),
                jobs: 0,
                seconds: 0.0,
                jobs_per_sec: allowed,
            });
            if let Some(fresh) = fresh_drain {
                let ours = r.ours.as_ref().map_or(0.0, Measurement::rate);
                r.notes.push(format!(
                    "the unlimited drain of this run (batch {batch}): {fresh:.0} jobs/s; the rate-limited drain ran at {:.2} of it, the configured rate is {:.2} of it",
                    ours / fresh,
                    allowed / fresh
                ));
            }
        }
        Workload::Fairness { batch } => {
            let mut runs = Vec::with_capacity(2);
            // The same drain with fair shares, then without; each namespace is dropped before
            // the next one opens its pool.
            for fair in [true, false] {
                let ns = server.ours(s.pool()).await?;
                let out = fairness_ours(ns.as_ref(), s, batch, fair, progress).await;
                let cleaned = ns.cleanup().await;
                let run = out?;
                cleaned.context("drop the namespace")?;
                runs.push(run);
            }
            let unfair = runs.pop().context("the drain without fair shares")?;
            let fair = runs.pop().context("the drain with fair shares")?;
            fairness_result(&mut r, fair, unfair);
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
        Workload::Workflow { batch, size } => {
            let ns = server.ours(s.pool()).await?;
            let out =
                workflow::workflow_ours(ns.as_ref(), server.kind(), s, batch, size, progress).await;
            let cleaned = ns.cleanup().await;
            let run = out?;
            cleaned.context("drop the namespace")?;
            r.ours = Some(run.drain);
            r.latency = run.latency;
            r.violations = run
                .violations
                .into_iter()
                .map(|v| format!("dbqueue: {v}"))
                .collect();
            r.notes = run.notes;
            if let (Some(o), Some(fresh)) = (&r.ours, fresh_drain) {
                r.baseline = Some(Measurement {
                    what: format!("the plain drain of this run (batch {batch})"),
                    jobs: 0,
                    seconds: 0.0,
                    jobs_per_sec: fresh,
                });
                r.ratio = Some(o.rate() / fresh);
            }
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
    seed_with(q, n, |_| Ok(NewJob::from_json(QUEUE, payload)?)).await
}

/// Pushes `n` jobs made by `job(i)` (i from 0) in batches (not measured).
async fn seed_with(q: &dyn Queue, n: u64, job: impl Fn(u64) -> Result<NewJob>) -> Result<()> {
    let mut from = 0;
    while from < n {
        let k = (n - from).min(SEED_BATCH as u64);
        q.push_batch((from..from + k).map(&job).collect::<Result<Vec<_>>>()?)
            .await?;
        from += k;
    }
    Ok(())
}

/// Jobs spread round-robin over `keys` concurrency keys, each limited to `key_limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeySpread {
    pub(crate) keys: u32,
    pub(crate) key_limit: u32,
}

impl KeySpread {
    /// The key of the `i`th job.
    fn key(&self, i: u64) -> String {
        format!("key-{:06}", i % u64::from(self.keys.max(1)))
    }
}

/// What a drain sets on its queue before the jobs are pushed, and checks while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Controls {
    /// A global concurrency limit (sampled in the database).
    pub(crate) limit: Option<u32>,
    /// Concurrency keys and a key limit (sampled in the database through `hot_keys`).
    pub(crate) keys: Option<KeySpread>,
    /// A rate limit (every start's window counted from the leases).
    pub(crate) rate: Option<RateLimit>,
    /// One retention round ([`history_retention`]) started with the workers, beside the drain,
    /// which must delete this many jobs.
    pub(crate) retention: Option<u64>,
    /// Completed jobs of the queue already in the table, from an earlier drain.
    pub(crate) kept_before: u64,
}

impl Controls {
    const NONE: Controls = Controls {
        limit: None,
        keys: None,
        rate: None,
        retention: None,
        kept_before: 0,
    };

    /// Whether the drain reads `stats` while it runs.
    fn sampled(&self) -> bool {
        self.limit.is_some() || self.keys.is_some()
    }
}

/// Jobs per second a rate limit allows.
pub(crate) fn per_second(rate: RateLimit) -> f64 {
    f64::from(rate.limit) / rate.period.as_secs_f64()
}

/// The least time `jobs` starts can take under `rate`, by its fixed windows: they need
/// `ceil(jobs / limit)` windows, and the first and last of them may be cut to an instant.
pub(crate) fn least_duration(jobs: u64, rate: RateLimit) -> Duration {
    let windows = jobs.div_ceil(u64::from(rate.limit));
    rate.period
        .saturating_mul(u32::try_from(windows.saturating_sub(2)).unwrap_or(u32::MAX))
}

/// The start of a job the handler runs, in microseconds by the database's clock: the expiry of
/// the lease it was claimed with, less the lease (an extension before it started does not
/// move it).
fn start_us(ctx: &JobContext) -> i64 {
    let expires = ctx
        .job
        .lease_expires_at
        .unwrap_or_else(|| ctx.lease().expires_at);
    expires.timestamp_micros() - LEASE.as_micros() as i64
}

/// The starts in each fixed window of `period` (from the Unix epoch) of the starts `starts_us`:
/// (the most in one window, the number of windows with a start).
fn window_counts(starts_us: &[i64], period: Duration) -> (u64, usize) {
    let period_us = (period.as_micros() as i64).max(1);
    let mut windows: HashMap<i64, u64> = HashMap::new();
    for t in starts_us {
        *windows.entry(t.div_euclid(period_us)).or_default() += 1;
    }
    (windows.values().copied().max().unwrap_or(0), windows.len())
}

/// The sustained workload: `s.producers` producers push batches of `s.push_batch` while the
/// worker drains, for `seconds`, and push only while fewer than [`SUSTAINED_BACKLOG`] jobs wait
/// (so the backlog stays about level and the table grows by the completed jobs it keeps). The
/// completions are counted per [`SUSTAINED_WINDOW`]; the measurement is every completion over
/// the whole run, and the notes hold the rate of each window and the last minute's beside the
/// first minute's. Every pushed job must complete exactly once by the end (the pushing stops
/// at the deadline, and the worker drains what is left).
async fn sustained_ours(
    ns: &dyn OursNs,
    s: &Settings,
    batch: Prefetch,
    seconds: u64,
    progress: bool,
) -> Outcome {
    let q = ns.queue();
    let payload = s.payload();
    let handled = Arc::new(AtomicU64::new(0));
    let pushed = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    let pb = bar(
        progress,
        seconds,
        format!(
            "dbqueue push and drain, worker x{} prefetch {batch}",
            s.workers
        ),
    );
    let handle = batch
        .apply(
            Worker::builder(q.clone(), QUEUE)
                .retention(queue_core::Retention::off())
                .concurrency(s.workers),
        )
        .lease(LEASE)
        .handler_fn(move |_ctx: JobContext| {
            h.fetch_add(1, Ordering::Relaxed);
            async { Ok::<(), JobError>(()) }
        })
        .build()?
        .start();
    let counters = handle.counters();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(seconds);
    let mut producers = JoinSet::new();
    for _ in 0..s.producers {
        let (q, pushed, counters) = (q.clone(), pushed.clone(), counters.clone());
        let (payload, n) = (payload.clone(), s.push_batch);
        producers.spawn(async move {
            while Instant::now() < deadline {
                let waiting = pushed
                    .load(Ordering::Relaxed)
                    .saturating_sub(counters.completed());
                if waiting >= SUSTAINED_BACKLOG {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
                let jobs = (0..n)
                    .map(|_| NewJob::from_json(QUEUE, &payload))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                q.push_batch(jobs).await.context("push a batch")?;
                pushed.fetch_add(n as u64, Ordering::Relaxed);
            }
            anyhow::Ok(())
        });
    }
    let mut windows: Vec<f64> = Vec::new();
    let (mut mark, mut at_mark) = (start, 0u64);
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        pb.set_position(start.elapsed().as_secs());
        if mark.elapsed() >= SUSTAINED_WINDOW {
            let done = counters.completed();
            windows.push((done - at_mark) as f64 / mark.elapsed().as_secs_f64());
            (mark, at_mark) = (Instant::now(), done);
        }
    }
    while let Some(p) = producers.join_next().await {
        p??;
    }
    let total = pushed.load(Ordering::Relaxed);
    let drain_deadline = Instant::now() + Duration::from_secs(s.workload_timeout_secs());
    while counters.completed() < total && Instant::now() < drain_deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    pb.finish_and_clear();
    let report = handle.shutdown(Duration::from_secs(10)).await;
    let mut notes = vec![claim_sizes(batch, &report.counters)];
    let per_minute = (60 / SUSTAINED_WINDOW.as_secs()).max(1) as usize;
    let mean = |w: &[f64]| w.iter().sum::<f64>() / w.len().max(1) as f64;
    if windows.len() >= 2 * per_minute {
        let first = mean(&windows[..per_minute]);
        let last = mean(&windows[windows.len() - per_minute..]);
        notes.push(format!(
            "first minute {first:.0} jobs/s, last minute {last:.0} jobs/s: last / first {:.2}",
            last / first.max(1e-9)
        ));
    }
    notes.push(format!(
        "completions per {} s window (jobs/s): {}",
        SUSTAINED_WINDOW.as_secs(),
        windows
            .iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    notes.push(format!(
        "{total} jobs pushed in batches of {} by {} producers while the backlog was under {SUSTAINED_BACKLOG}",
        s.push_batch, s.producers
    ));
    let check = ns.check(QUEUE).await?;
    let mut violations = check.violations(kept_after_completion(total));
    let ran = handled.load(Ordering::Relaxed);
    if ran != total {
        violations.push(format!("the handler ran {ran} times for {total} jobs"));
    }
    if !report.all_settled() {
        violations.push(format!("the worker did not settle every job: {report:?}"));
    }
    Ok((
        Measurement::new(
            format!(
                "worker runtime, {} slots, prefetch {batch}, pushing and draining for {seconds} s",
                s.workers
            ),
            at_mark,
            mark - start,
        ),
        violations,
        notes,
    ))
}

/// What the worker's claims were: how many, their mean and largest size, under the prefetch
/// it was given.
pub(crate) fn claim_sizes(batch: Prefetch, c: &queue_core::worker::CountersSnapshot) -> String {
    let mean = if c.claims > 0 {
        c.claimed as f64 / c.claims as f64
    } else {
        0.0
    };
    format!(
        "worker prefetch {batch}: {} claims, {mean:.1} jobs per claim on average, {} at most",
        c.claims, c.largest_claim
    )
}

async fn drain_ours(
    ns: &dyn OursNs,
    s: &Settings,
    batch: Prefetch,
    backlog: u64,
    controls: Controls,
    progress: bool,
) -> Outcome {
    let q = ns.queue();
    let payload = s.payload();
    let mut notes = Vec::new();
    if let Some(n) = controls.limit {
        q.set_concurrency_limit(QUEUE, Some(n))
            .await
            .context("set the concurrency limit")?;
    }
    if let Some(k) = controls.keys {
        q.set_key_limit(QUEUE, Some(k.key_limit))
            .await
            .context("set the key limit")?;
    }
    if let Some(rate) = controls.rate {
        q.set_rate_limit(QUEUE, Some(rate))
            .await
            .context("set the rate limit")?;
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
    match controls.keys {
        Some(k) => {
            seed_with(q.as_ref(), s.jobs, |i| {
                Ok(NewJob::from_json(QUEUE, &payload)?.concurrency_key(k.key(i)))
            })
            .await
        }
        None => seed_ours(q.as_ref(), s.jobs, &payload).await,
    }
    .context("seed the jobs")?;

    let handled = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    // A rate-limited drain records every start (database clock) to count them by window.
    let starts: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(Vec::new()));
    let (record, st) = (controls.rate.is_some(), starts.clone());
    let pb = bar(
        progress,
        s.jobs,
        format!("dbqueue worker x{} prefetch {batch}", s.workers),
    );
    let start = Instant::now();
    // Retention off: the drain alone is measured (a filled backlog is a day old, which the
    // default rules would start deleting).
    let handle = batch
        .apply(
            Worker::builder(q.clone(), QUEUE)
                .retention(queue_core::Retention::off())
                .concurrency(s.workers),
        )
        .lease(LEASE)
        .handler_fn(move |ctx: JobContext| {
            h.fetch_add(1, Ordering::Relaxed);
            if record {
                let at = start_us(&ctx);
                st.lock().unwrap_or_else(|e| e.into_inner()).push(at);
            }
            async { Ok::<(), JobError>(()) }
        })
        .build()?
        .start();
    let round = controls.retention.map(|_| {
        let q = q.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            let report = q.run_retention(&history_retention()).await;
            (report, t.elapsed())
        })
    });
    let counters = handle.counters();
    let deadline = Duration::from_secs(s.workload_timeout_secs());
    let mut timed_out = false;
    // A limited or keyed drain is sampled in the database every 20 ms: never more jobs running
    // than the limit, never more of one key than the key limit.
    let (mut most_running, mut samples, mut sampled) = (0u64, 0u64, None::<Instant>);
    let mut hottest: Option<(u64, String)> = None;
    // Samples that saw a key with running jobs, and a key at its limit.
    let (mut hot_samples, mut full_samples) = (0u64, 0u64);
    while counters.completed() < s.jobs {
        if start.elapsed() > deadline {
            timed_out = true;
            break;
        }
        pb.set_position(counters.completed());
        if controls.sampled() && sampled.is_none_or(|t| t.elapsed() >= SAMPLE_EVERY) {
            let stats = q.stats(Some(QUEUE)).await?;
            if let Some(st) = stats.first() {
                most_running = most_running.max(st.running);
                hot_samples += u64::from(!st.hot_keys.is_empty());
                let key_limit = controls.keys.map_or(u64::MAX, |k| u64::from(k.key_limit));
                full_samples += u64::from(st.hot_keys.iter().any(|h| h.running >= key_limit));
                for hot in &st.hot_keys {
                    if hottest.as_ref().is_none_or(|(n, _)| hot.running > *n) {
                        hottest = Some((hot.running, hot.key.clone()));
                    }
                }
            }
            samples += 1;
            sampled = Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = start.elapsed();
    pb.finish_and_clear();
    let report = handle.shutdown(Duration::from_secs(10)).await;
    notes.push(claim_sizes(batch, &report.counters));
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
    let mut violations =
        check.violations(kept_after_completion(s.jobs) + backlog + controls.kept_before);
    if let Some(round) = round {
        let (report, took) = round.await.context("the retention round's task")?;
        let report = report.context("the retention round")?;
        match report {
            None => violations.push("the retention round did not run (its lease was held)".into()),
            Some(report) => {
                if report.unfinished {
                    violations.push(format!(
                        "the retention round stopped at its time limit after {:.1} s",
                        took.as_secs_f64()
                    ));
                }
                let beside = if took >= elapsed {
                    "the whole drain ran beside it".to_string()
                } else {
                    format!(
                        "it ended {:.1} s into the drain of {:.1} s",
                        took.as_secs_f64(),
                        elapsed.as_secs_f64()
                    )
                };
                notes.push(format!(
                    "a retention round beside the drain deleted {} completed jobs in {:.2} s ({:.0} jobs/s); {beside}",
                    report.completed,
                    took.as_secs_f64(),
                    report.completed as f64 / took.as_secs_f64().max(1e-9),
                ));
                let due = controls.retention.unwrap_or_default();
                if report.completed != due {
                    violations.push(format!(
                        "the retention round deleted {} jobs, expected {due}",
                        report.completed
                    ));
                }
            }
        }
    }
    if let Some(n) = controls.limit {
        if most_running > u64::from(n) {
            violations.push(format!(
                "{most_running} jobs were running at once under a limit of {n}"
            ));
        }
        notes.push(format!(
            "at most {most_running} jobs running in {samples} samples of the database (limit {n})"
        ));
    }
    if let Some(k) = controls.keys {
        let (most, key) = hottest.unwrap_or((0, "-".into()));
        if most > u64::from(k.key_limit) {
            violations.push(format!(
                "{most} jobs of key {key} were running at once under a key limit of {}",
                k.key_limit
            ));
        }
        notes.push(format!(
            "most running jobs of one key: {most} (key {key}), and {most_running} in all, in {samples} samples of the database's hot keys: {hot_samples} saw a key with running jobs, {full_samples} a key at its limit ({} keys, key limit {})",
            k.keys, k.key_limit
        ));
    }
    if let Some(rate) = controls.rate {
        let starts = std::mem::take(&mut *starts.lock().unwrap_or_else(|e| e.into_inner()));
        let (most, windows) = window_counts(&starts, rate.period);
        if most > u64::from(rate.limit) {
            violations.push(format!(
                "{most} jobs started in one window of {} ms under a rate limit of {}",
                rate.period.as_millis(),
                rate.limit
            ));
        }
        let least = least_duration(s.jobs, rate);
        let span = match (starts.iter().min(), starts.iter().max()) {
            (Some(a), Some(b)) => Duration::from_micros(u64::try_from(b - a).unwrap_or(0)),
            _ => Duration::ZERO,
        };
        notes.push(format!(
            "at most {most} starts in one window of {} ms (limit {}) over {windows} windows, by the database's clock (lease expiry less the lease); first to last start {:.2} s, the least the rate allows {:.2} s; achieved {:.0} jobs/s of {:.0} allowed",
            rate.period.as_millis(),
            rate.limit,
            span.as_secs_f64(),
            least.as_secs_f64(),
            s.jobs as f64 / elapsed.as_secs_f64(),
            per_second(rate),
        ));
        if span < least {
            violations.push(format!(
                "the starts spanned {span:?}, less than the {least:?} the rate allows"
            ));
        }
        if starts.len() as u64 != s.jobs {
            violations.push(format!(
                "{} starts recorded for {} jobs",
                starts.len(),
                s.jobs
            ));
        }
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

/// The retention workload on `ns` (which the caller drops): fills the history, drains, then
/// drains again beside a retention round, and checks that the round deleted exactly the tenth
/// of the history past its rule.
async fn retention_at_scale(
    ns: &dyn OursNs,
    s: &Settings,
    batch: Prefetch,
    progress: bool,
    r: &mut WorkloadResult,
) -> Result<()> {
    let payload = s.payload();
    let rows = s.backlog_rows;
    let due = rows / 10;
    let t = Instant::now();
    let filled = ns
        .fill_history(HISTORY, rows - due, &payload, DAY, 9 * DAY)
        .await
        .context("fill the history")?
        && ns
            .fill_history(HISTORY, due, &payload, 12 * DAY, DAY)
            .await
            .context("fill the history")?;
    if !filled {
        r.notes.push(
            "not measured: queue-bench fills a history of finish times on PostgreSQL and SQLite only"
                .into(),
        );
        return Ok(());
    }
    r.notes.push(format!(
        "{rows} completed jobs of another queue inserted in {:.1} s, finished 1 to 10 days ago and ({due} of them) 12 to 13 days ago{}; the round deletes completed jobs {:.1} days after they finish",
        t.elapsed().as_secs_f64(),
        match crate::backend::finished_partitions() {
            Some(every) => format!(
                ", in finished partitions of {} h (a round drops whole partitions)",
                every.as_secs() / 3600
            ),
            None => String::new(),
        },
        HISTORY_RULE.as_secs_f64() / DAY.as_secs_f64()
    ));
    let (plain, violations, notes) = drain_ours(ns, s, batch, 0, Controls::NONE, progress).await?;
    r.violations.extend(
        violations
            .into_iter()
            .map(|v| format!("dbqueue, the drain alone: {v}")),
    );
    r.notes
        .extend(notes.into_iter().map(|n| format!("the drain alone: {n}")));
    let controls = Controls {
        retention: Some(due),
        kept_before: kept_after_completion(s.jobs),
        ..Controls::NONE
    };
    let (beside, violations, notes) = drain_ours(ns, s, batch, 0, controls, progress).await?;
    r.violations
        .extend(violations.into_iter().map(|v| format!("dbqueue: {v}")));
    r.notes
        .extend(notes.into_iter().map(|n| format!("beside the round: {n}")));
    let history = queue_core::JobFilter {
        queue: Some(HISTORY.into()),
        state: Some(queue_core::JobState::Completed),
        ..Default::default()
    };
    let left = ns
        .queue()
        .count_matching(queue_core::BulkAction::Delete, &history)
        .await
        .context("count the history left")?;
    if left != rows - due {
        r.violations.push(format!(
            "the retention round left {left} of the history's {rows} jobs, expected {}",
            rows - due
        ));
    }
    r.ours = Some(beside);
    let mut plain = plain;
    plain.what = format!("the same drain without the round, before it (prefetch {batch})");
    r.baseline = Some(plain);
    r.set_ratio();
    Ok(())
}

/// One drain of the fairness workload.
struct FairRun {
    fair: bool,
    drain: Measurement,
    /// B's jobs: from the push (its `created_at`) to the claim (its lease's start), both by
    /// the database's clock.
    wait_db: Vec<Duration>,
    /// B's jobs: from the push call to the handler's start, by this process's clock.
    wait_client: Vec<Duration>,
    /// B's jobs: the claims of A's jobs that started after the B job was pushed and before it
    /// was claimed, sorted.
    rounds: Vec<u64>,
    /// Claims that gave out A's jobs in the whole drain.
    claims: u64,
    violations: Vec<String>,
    notes: Vec<String>,
}

/// The handler's record of the fairness drain: each A job's (start, claim's `updated_at`), each
/// B job's (start, created_at, handler start).
#[derive(Default)]
struct FairSeen {
    a: Vec<(i64, i64)>,
    b: Vec<(i64, i64, Instant)>,
}

/// The claims that gave out `jobs` (start, claim's `updated_at`): the jobs of one claim share
/// its `updated_at` (its transaction's time), while their starts may differ by row (PostgreSQL
/// takes each lease's start from `clock_timestamp()`). Each claim's time is its earliest start;
/// sorted.
fn claim_times(jobs: &[(i64, i64)]) -> Vec<i64> {
    let mut claims: HashMap<i64, i64> = HashMap::new();
    for &(start, claim) in jobs {
        let at = claims.entry(claim).or_insert(start);
        *at = (*at).min(start);
    }
    let mut times: Vec<i64> = claims.into_values().collect();
    times.sort_unstable();
    times
}

/// For each late job (start, created_at): how many claims of `claims_us` (sorted, distinct)
/// started after it was pushed and before it was claimed; sorted.
fn claims_between(claims_us: &[i64], late: &[(i64, i64)]) -> Vec<u64> {
    let mut rounds: Vec<u64> = late
        .iter()
        .map(|&(start, created)| {
            let before_claim = claims_us.partition_point(|&t| t < start);
            let before_push = claims_us.partition_point(|&t| t <= created);
            before_claim.saturating_sub(before_push) as u64
        })
        .collect();
    rounds.sort_unstable();
    rounds
}

/// Key A's `s.jobs` jobs drained by the worker (fair shares on or off); once the drain has
/// started, key B pushes [`LATE_JOBS`] jobs; the drain ends when every job completed.
async fn fairness_ours(
    ns: &dyn OursNs,
    s: &Settings,
    batch: Prefetch,
    fair: bool,
    progress: bool,
) -> Result<FairRun> {
    let q = ns.queue();
    let payload = s.payload();
    if fair {
        q.set_fair_shares(QUEUE, true)
            .await
            .context("turn fair shares on")?;
    }
    seed_with(q.as_ref(), s.jobs, |_| {
        Ok(NewJob::from_json(QUEUE, &payload)?.concurrency_key(KEY_A))
    })
    .await
    .context("seed key A's jobs")?;
    let late: Vec<NewJob> = (0..LATE_JOBS)
        .map(|n| {
            Ok(NewJob::from_json(QUEUE, &format!("{{\"late\":{n}}}"))?
                .kind(LATE_KIND)
                .concurrency_key(KEY_B))
        })
        .collect::<Result<_>>()?;
    let total = s.jobs + LATE_JOBS;

    let seen = Arc::new(Mutex::new(FairSeen::default()));
    let sn = seen.clone();
    let pb = bar(
        progress,
        total,
        format!(
            "dbqueue {} x{} prefetch {batch}",
            if fair { "fair" } else { "unfair" },
            s.workers
        ),
    );
    let start = Instant::now();
    let handle = batch
        .apply(
            Worker::builder(q.clone(), QUEUE)
                .retention(queue_core::Retention::off())
                .concurrency(s.workers),
        )
        .lease(LEASE)
        .handler_fn(move |ctx: JobContext| {
            let at = start_us(&ctx);
            let mut seen = sn.lock().unwrap_or_else(|e| e.into_inner());
            if ctx.kind() == Some(LATE_KIND) {
                seen.b
                    .push((at, ctx.job.created_at.timestamp_micros(), Instant::now()));
            } else {
                seen.a.push((at, ctx.job.updated_at.timestamp_micros()));
            }
            async { Ok::<(), JobError>(()) }
        })
        .build()?
        .start();
    let counters = handle.counters();
    let deadline = Duration::from_secs(s.workload_timeout_secs());
    let mut timed_out = false;
    // Once the drain has started (a first job completed), key B pushes its jobs.
    while counters.completed() == 0 && start.elapsed() <= deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let a_done_at_push = counters.completed();
    let pushed_at = Instant::now();
    let pushed = q.push_batch(late).await;
    if let Err(e) = pushed {
        handle.shutdown(Duration::from_secs(10)).await;
        return Err(e).context("push key B's jobs");
    }
    while counters.completed() < total {
        if start.elapsed() > deadline {
            timed_out = true;
            break;
        }
        pb.set_position(counters.completed());
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = start.elapsed();
    pb.finish_and_clear();
    let report = handle.shutdown(Duration::from_secs(10)).await;
    if timed_out {
        bail!(
            "the worker completed {} of {total} jobs in {elapsed:?}; counters {:?}",
            counters.completed(),
            counters.snapshot()
        );
    }
    let check = ns.check(QUEUE).await?;
    let mut violations = check.violations(kept_after_completion(total));
    let snap = counters.snapshot();
    if snap.completed != total {
        violations.push(format!(
            "worker counted {} completed, expected {total}",
            snap.completed
        ));
    }
    if snap.retried + snap.dead + snap.lease_lost + snap.abandoned + snap.pop_errors != 0 {
        violations.push(format!("unexpected worker outcomes: {snap:?}"));
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
    if seen.a.len() as u64 != s.jobs || seen.b.len() as u64 != LATE_JOBS {
        violations.push(format!(
            "the handler ran {} of key A's {} jobs and {} of key B's {LATE_JOBS}",
            seen.a.len(),
            s.jobs,
            seen.b.len()
        ));
    }
    let claims = claim_times(&seen.a);
    let first_push = seen.b.iter().map(|b| b.1).min().unwrap_or(i64::MAX);
    let a_after_push = seen.a.iter().filter(|a| a.0 > first_push).count() as u64;
    let late: Vec<(i64, i64)> = seen.b.iter().map(|b| (b.0, b.1)).collect();
    let rounds = claims_between(&claims, &late);
    let wait_db = seen
        .b
        .iter()
        .map(|b| Duration::from_micros(u64::try_from(b.0 - b.1).unwrap_or(0)))
        .collect();
    let wait_client = seen
        .b
        .iter()
        .map(|b| b.2.saturating_duration_since(pushed_at))
        .collect();
    let mut notes = Vec::new();
    if report.aborted != 0 {
        notes.push(format!("worker shutdown: {report:?}"));
    }
    notes.push(format!(
        "{}: key B pushed after {a_done_at_push} of A's jobs completed; {a_after_push} of A's {} jobs were claimed after it, in {} claims of A in all",
        if fair { "fair shares" } else { "without fair shares" },
        s.jobs,
        claims.len()
    ));
    Ok(FairRun {
        fair,
        drain: Measurement::new(
            format!(
                "worker runtime, {} slots, prefetch {batch}, {} jobs of key A and {LATE_JOBS} of key B, {}",
                s.workers,
                s.jobs,
                if fair { "fair shares" } else { "no fair shares" }
            ),
            total,
            elapsed,
        ),
        wait_db,
        wait_client,
        rounds,
        claims: claims.len() as u64,
        violations,
        notes,
    })
}

/// The fairness workload's result: the fair drain as ours, the unfair one as the comparison,
/// B's waits in both.
fn fairness_result(r: &mut WorkloadResult, fair: FairRun, unfair: FairRun) {
    let mut p99 = Vec::new();
    for run in [&fair, &unfair] {
        let how = if run.fair {
            "fair shares"
        } else {
            "no fair shares"
        };
        let db = Latency::of(
            &format!("key B, push -> claim (database clock), {how}"),
            run.wait_db.clone(),
        );
        p99.push(db.p99_ms);
        r.latency.push(db);
        r.latency.push(Latency::of(
            &format!("key B, push call -> handler start (client clock), {how}"),
            run.wait_client.clone(),
        ));
        r.notes.extend(run.notes.iter().cloned());
        let pick = |q: f64| nearest_rank(&run.rounds, q).unwrap_or(0);
        r.notes.push(format!(
            "{how}: B's jobs were claimed after p50 {} / p99 {} / max {} claims of A's jobs that started after their push ({} claims of A in the drain, {:.1} of A's jobs each)",
            pick(0.5),
            pick(0.99),
            pick(1.0),
            run.claims,
            run.drain.jobs.saturating_sub(LATE_JOBS) as f64 / run.claims.max(1) as f64,
        ));
    }
    if let [with, without] = p99[..] {
        r.notes.push(format!(
            "key B's p99 wait (push -> claim): {with:.1} ms with fair shares, {without:.1} ms without ({:.1}x)",
            if with > 0.0 { without / with } else { 0.0 }
        ));
    }
    for run in [fair, unfair] {
        let tag = if run.fair { "fair" } else { "unfair" };
        r.violations.extend(
            run.violations
                .into_iter()
                .map(|v| format!("dbqueue ({tag}): {v}")),
        );
        if run.fair {
            r.ours = Some(run.drain);
        } else {
            r.baseline = Some(run.drain);
        }
    }
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
    let handle = s
        .batch
        .apply(
            Worker::builder(q.clone(), QUEUE)
                .retention(queue_core::Retention::off())
                .concurrency(s.workers),
        )
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
    violations.extend(check.violations(kept_after_completion(s.latency_jobs)));
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
            batch: Prefetch::Max(1),
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

    fn small(jobs: u64) -> Settings {
        Settings {
            jobs,
            workers: 8,
            batch: Prefetch::Max(50),
            payload_bytes: 64,
            producers: 2,
            push_batch: 100,
            backlog_rows: 0,
            latency_rate: 100,
            latency_jobs: 10,
            baseline: false,
            smoke: true,
        }
    }

    /// Runs `w` on a fresh SQLite directory and fails on any violation.
    async fn run_on_sqlite(w: Workload, s: &Settings, fresh: Option<f64>) -> WorkloadResult {
        let server = crate::sqlite::SqliteServer::new(None).unwrap();
        let r = run(&server, None, w, s, false, fresh).await.unwrap();
        assert!(r.violations.is_empty(), "{w:?}: {:?}", r.violations);
        r
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_keyed_drain_holds_the_key_limit_and_says_so() {
        let s = small(400);
        let w = Workload::DrainKeyed {
            batch: Prefetch::Max(50),
            keys: 20,
            key_limit: 2,
        };
        let r = run_on_sqlite(w, &s, Some(1000.0)).await;
        assert_eq!(r.ours.as_ref().map(|m| m.jobs), Some(400));
        assert!(r.ratio.is_some(), "compared with the unlimited drain");
        let note = r
            .notes
            .iter()
            .find(|n| n.starts_with("most running jobs of one key"))
            .unwrap_or_else(|| panic!("no hot-key note in {:?}", r.notes));
        assert!(note.contains("20 keys, key limit 2"), "{note}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn workflows_drain_in_order_beside_the_plain_drain() {
        // 250 jobs: two whole workflows of 100.
        let s = small(250);
        let w = Workload::Workflow {
            batch: Prefetch::Max(50),
            size: 100,
        };
        let r = run_on_sqlite(w, &s, Some(1000.0)).await;
        assert_eq!(r.ours.as_ref().map(|m| m.jobs), Some(200));
        assert_eq!(r.ratio.map(|x| x > 0.0), Some(true), "{r:?}");
        assert_eq!(r.latency.len(), 2, "{:?}", r.latency);
        assert_eq!(r.latency[0].samples, 2, "a push_workflow per workflow");
        assert_eq!(r.latency[1].samples, 2, "a join per workflow");
        assert!(
            r.notes[0].contains("2 workflows of 100 jobs"),
            "{:?}",
            r.notes
        );
        assert!(r.notes.iter().any(|n| n.starts_with("order checked")));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_rate_limited_drain_counts_every_window() {
        let s = small(300);
        let rate = RateLimit::new(100, Duration::from_millis(50)).unwrap();
        let r = run_on_sqlite(
            Workload::DrainRate {
                batch: Prefetch::Max(50),
                rate,
            },
            &s,
            Some(10_000.0),
        )
        .await;
        let ours = r.ours.as_ref().unwrap();
        // 300 starts need 3 windows of 50 ms: at least one whole window between the first and
        // the last.
        assert!(ours.seconds >= 0.05, "{ours:?}");
        assert_eq!(r.baseline.as_ref().map(Measurement::rate), Some(2000.0));
        assert!(r.notes.iter().any(|n| n.contains("starts in one window")));
        assert!(r.notes.iter().any(|n| n.contains("the unlimited drain")));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fairness_reports_key_b_with_and_without_fair_shares() {
        let s = small(600);
        let r = run_on_sqlite(
            Workload::Fairness {
                batch: Prefetch::Max(50),
            },
            &s,
            None,
        )
        .await;
        assert_eq!(r.ours.as_ref().map(|m| m.jobs), Some(600 + LATE_JOBS));
        assert_eq!(r.baseline.as_ref().map(|m| m.jobs), Some(600 + LATE_JOBS));
        assert!(r.ratio.is_some());
        assert_eq!(r.latency.len(), 4, "{:?}", r.latency);
        for l in &r.latency {
            assert_eq!(l.samples, LATE_JOBS as usize, "{l:?}");
        }
        assert!(r.latency[0].measured.ends_with(", fair shares"));
        assert!(r.latency[2].measured.ends_with(", no fair shares"));
        assert!(r.notes.iter().any(|n| n.starts_with("key B's p99 wait")));
    }

    #[test]
    fn rate_windows_are_fixed_from_the_epoch() {
        let period = Duration::from_millis(10);
        // 10 ms = 10,000 us: windows 0, 0, 1, 1, 1, 3.
        let starts = [0, 9_999, 10_000, 15_000, 19_999, 30_000];
        assert_eq!(window_counts(&starts, period), (3, 3));
        assert_eq!(window_counts(&[], period), (0, 0));
        let rate = RateLimit::new(100, Duration::from_millis(50)).unwrap();
        assert_eq!(least_duration(300, rate), Duration::from_millis(50));
        assert_eq!(least_duration(301, rate), Duration::from_millis(100));
        assert_eq!(least_duration(100, rate), Duration::ZERO);
        assert_eq!(per_second(rate), 2000.0);
    }

    #[test]
    fn claims_are_counted_between_a_push_and_its_claim() {
        // Three jobs of one claim (same updated_at, starts a few us apart) and two claims more.
        let a = [(100, 7), (101, 7), (103, 7), (200, 8), (300, 9)];
        let claims = claim_times(&a);
        assert_eq!(claims, vec![100, 200, 300]);
        // Pushed at 150: claimed at 250 (after one claim of A), at 350 (after two), at 160
        // (none); pushed at 200 exactly: the claim at 200 does not count.
        let late = [(250, 150), (350, 150), (160, 150), (250, 200)];
        assert_eq!(claims_between(&claims, &late), vec![0, 0, 1, 2]);
    }

    #[test]
    fn keys_go_round_robin() {
        let k = KeySpread {
            keys: 3,
            key_limit: 1,
        };
        assert_eq!(k.key(0), k.key(3));
        assert_ne!(k.key(0), k.key(1));
        assert!(queue_core::validate::concurrency_key(&k.key(2)).is_ok());
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
