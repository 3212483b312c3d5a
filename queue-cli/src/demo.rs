//! `demo`: thousands of jobs through a fresh queue, some failing and retrying, with a progress
//! bar and a summary. Runs on an embedded SQLite file, so it needs no server.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use queue_core::validate::redact_url;
use queue_core::{validate, JobContext, JobError, NewJob, Queue, QueueStats, RetryPolicy, Worker};
use serde::{Deserialize, Serialize};

use crate::admin::stats_table;
use crate::duration;
use crate::failure::CliError;

/// Most jobs one demo may push.
const MAX_JOBS: u64 = 1_000_000;

/// `demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Database URL [default: a fresh SQLite file in the temporary directory, removed
    /// afterwards].
    #[arg(long)]
    url: Option<String>,
    /// How many jobs to push.
    #[arg(long, default_value_t = 10_000)]
    jobs: u64,
    /// Handlers running at once.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Jobs per push_batch call.
    #[arg(long, default_value_t = 500)]
    batch: usize,
    /// The queue to use; it must have no waiting, pending or running jobs.
    #[arg(long, default_value = "demo")]
    queue: String,
    /// Simulated work per job, e.g. 2ms.
    #[arg(long, default_value = "0ms")]
    work: String,
    /// Give up when the jobs have not all finished after this long.
    #[arg(long, default_value = "5m")]
    timeout: String,
    /// Keep the temporary SQLite file (its path is printed).
    #[arg(long)]
    keep: bool,
}

/// What a demo job does: every tenth fails its first attempt and succeeds on the retry, every
/// hundredth fails permanently and goes dead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Plan {
    Succeed,
    FailOnce,
    FailAlways,
}

#[derive(Debug, Serialize, Deserialize)]
struct DemoJob {
    n: u64,
    plan: Plan,
}

impl Plan {
    fn of(n: u64) -> Plan {
        if n.is_multiple_of(100) {
            Plan::FailAlways
        } else if n % 10 == 5 {
            Plan::FailOnce
        } else {
            Plan::Succeed
        }
    }
}

/// Retries within the run: 50 ms, then 100 ms, ... capped at 1 s.
fn demo_retry_policy() -> RetryPolicy {
    RetryPolicy {
        base: Duration::from_millis(50),
        factor: 2.0,
        max: Duration::from_secs(1),
        jitter: 0.2,
    }
}

/// A temporary SQLite file that is removed (with its WAL files) when dropped, unless kept.
struct TempDb {
    path: PathBuf,
    keep: bool,
}

impl TempDb {
    fn new(keep: bool) -> TempDb {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let path =
            std::env::temp_dir().join(format!("dbqueue-demo-{}-{nanos:09}.db", std::process::id()));
        TempDb { path, keep }
    }

    fn url(&self) -> String {
        format!("sqlite://{}", self.path.display())
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        if !self.keep {
            for suffix in ["", "-wal", "-shm"] {
                let mut p = self.path.clone().into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

pub(crate) async fn run(args: DemoArgs) -> Result<(), CliError> {
    validate::queue_name(&args.queue)?;
    if !(1..=MAX_JOBS).contains(&args.jobs) {
        return Err(CliError::usage(format!(
            "invalid jobs: must be between 1 and {MAX_JOBS}"
        )));
    }
    if args.batch == 0 {
        return Err(CliError::usage("invalid batch: must be at least 1"));
    }
    let work = duration::parse("work", &args.work)?;
    let timeout = duration::parse("timeout", &args.timeout)?;

    let (url, temp) = match &args.url {
        Some(url) => (url.clone(), None),
        None => {
            let temp = TempDb::new(args.keep);
            (temp.url(), Some(temp))
        }
    };
    let options = dbqueue::Options {
        retry_policy: demo_retry_policy(),
        ..dbqueue::Options::default()
    };
    let queue = dbqueue::connect_with(&url, options).await?;
    queue.migrate().await?;
    let caps = queue.capabilities().clone();
    eprintln!(
        "demo: {} jobs on {:?} ({}{}, claim {}), concurrency {}",
        args.jobs,
        redact_url(&url),
        dbqueue::Backend::from_url(&url)?,
        caps.server_version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default(),
        caps.claim.as_str(),
        args.concurrency,
    );

    let before = queue_stats(&queue, &args.queue).await?;
    if before.paused {
        return Err(CliError::usage(format!(
            "invalid queue: {:?} is paused in this database, so the demo's jobs would never run; \
             resume it with `queue resume {}` or choose another --queue",
            args.queue, args.queue
        )));
    }
    let live = before.waiting + before.available + before.scheduled + before.running;
    if live > 0 {
        return Err(CliError::usage(format!(
            "invalid queue: {:?} already has {live} waiting, pending or running job(s) in this \
             database; choose another --queue or a fresh --url",
            args.queue
        )));
    }

    // Enqueue-to-start latency of each job's first attempt, in microseconds.
    let latencies = Arc::new(Mutex::new(Vec::<i64>::with_capacity(args.jobs as usize)));
    let recorded = latencies.clone();
    let handle = Worker::builder(queue.clone(), args.queue.as_str())
        .concurrency(args.concurrency)
        .poll_interval(Duration::from_millis(5), Duration::from_millis(100))
        .lease(Duration::from_secs(30))
        .typed(move |job: DemoJob, ctx: JobContext| {
            let recorded = recorded.clone();
            async move {
                if ctx.attempt() == 1 {
                    let waited = chrono::Utc::now() - ctx.job.created_at;
                    let micros = waited.num_microseconds().unwrap_or(i64::MAX).max(0);
                    recorded
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(micros);
                }
                if !work.is_zero() {
                    tokio::time::sleep(work).await;
                }
                match job.plan {
                    Plan::FailAlways => Err(JobError::permanent(format!(
                        "job {} always fails (a permanent error)",
                        job.n
                    ))),
                    Plan::FailOnce if ctx.attempt() == 1 => Err(JobError::retryable(format!(
                        "job {} fails its first attempt (a transient error)",
                        job.n
                    ))),
                    _ => Ok(()),
                }
            }
        })
        .build()?
        .start();
    let counters = handle.counters();

    let bar = ProgressBar::new(args.jobs);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {elapsed_precise} [{bar:32}] {pos}/{len} finished, {rate} {msg}",
        )
        .map_err(|e| CliError::other(format!("progress bar template: {e}")))?
        // Whole jobs per second, as in the summary (indicatif's `{per_sec}` shows decimals).
        .with_key(
            "rate",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} jobs/s", state.per_sec());
            },
        )
        .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(100));

    let started = Instant::now();
    // Push from a task of its own so the bar moves while jobs go in.
    let pusher = {
        let queue = queue.clone();
        let name = args.queue.clone();
        let (jobs, batch) = (args.jobs, args.batch as u64);
        tokio::spawn(async move {
            let mut next = 0;
            while next < jobs {
                let end = (next + batch).min(jobs);
                let mut chunk = Vec::with_capacity((end - next) as usize);
                for n in next..end {
                    chunk.push(NewJob::new(
                        name.as_str(),
                        &DemoJob {
                            n,
                            plan: Plan::of(n),
                        },
                    )?);
                }
                queue.push_batch(chunk).await?;
                next = end;
            }
            Ok::<(), queue_core::Error>(())
        })
    };

    let deadline = started + timeout;
    let mut pushed = false;
    let mut pusher = Some(pusher);
    let outcome: Result<(), CliError> = loop {
        if let Some(task) = pusher.as_ref() {
            if task.is_finished() {
                if let Some(task) = pusher.take() {
                    match task.await {
                        Ok(Ok(())) => pushed = true,
                        Ok(Err(e)) => break Err(e.into()),
                        Err(e) => {
                            break Err(CliError::other(format!("the pushing task failed: {e}")))
                        }
                    }
                }
            }
        }
        let c = counters.snapshot();
        let finished = c.completed + c.dead;
        bar.set_position(finished.min(args.jobs));
        bar.set_message(format!("({} retried, {} dead)", c.retried, c.dead));
        if pushed && finished >= args.jobs {
            break Ok(());
        }
        if Instant::now() >= deadline {
            break Err(CliError::other(format!(
                "only {finished} of {} jobs finished within {:?}",
                args.jobs, timeout
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let elapsed = started.elapsed();
    if let Some(task) = pusher {
        task.abort();
    }
    bar.finish_and_clear();
    let report = handle.shutdown(Duration::from_secs(10)).await;
    outcome?;

    // The database has the last word: nothing may be left pending or running.
    let after = queue_stats(&queue, &args.queue).await?;
    let c = report.counters;
    let completed = after.completed - before.completed;
    let dead = after.dead - before.dead;
    let left = after.waiting + after.available + after.scheduled + after.running;
    if left > 0 || completed != c.completed || dead != c.dead || completed + dead != args.jobs {
        return Err(CliError::other(format!(
            "the database disagrees with the worker: stats show {completed} completed, {dead} \
             dead and {left} unfinished; the worker counted {} completed and {} dead",
            c.completed, c.dead
        )));
    }

    let mut lat = std::mem::take(&mut *latencies.lock().unwrap_or_else(|e| e.into_inner()));
    lat.sort_unstable();
    let throughput = args.jobs as f64 / elapsed.as_secs_f64().max(1e-9);
    println!("demo finished: every job completed or dead");
    println!("  jobs        {}", args.jobs);
    println!("  completed   {completed}");
    println!(
        "  retried     {}   (failures sent back for another attempt)",
        c.retried
    );
    println!("  dead        {dead}   (failed permanently)");
    println!("  elapsed     {:.2} s", elapsed.as_secs_f64());
    println!("  throughput  {throughput:.0} jobs/s");
    println!(
        "  latency     p50 {}, p99 {}   (enqueue to first start, {} samples)",
        fmt_micros(percentile(&lat, 0.50)),
        fmt_micros(percentile(&lat, 0.99)),
        lat.len()
    );
    println!("stats for queue {}:", args.queue);
    print!("{}", stats_table(&[after]));
    if let Some(t) = &temp {
        if t.keep {
            println!("database kept at {}", t.path.display());
        }
    }
    Ok(())
}

/// The counts of one queue (zeros when it has no jobs yet).
async fn queue_stats(queue: &Arc<dyn Queue>, name: &str) -> Result<QueueStats, CliError> {
    let stats = queue.stats(Some(name)).await?;
    Ok(stats
        .into_iter()
        .find(|s| s.queue == name)
        .unwrap_or_else(|| QueueStats {
            queue: name.to_owned(),
            ..QueueStats::default()
        }))
}

/// The nearest-rank percentile `p` (0..=1) of sorted values.
fn percentile(sorted: &[i64], p: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn fmt_micros(micros: Option<i64>) -> String {
    match micros {
        None => "n/a".to_owned(),
        Some(us) if us < 1_000 => format!("{:.2} ms", us as f64 / 1_000.0),
        Some(us) if us < 1_000_000 => format!("{:.1} ms", us as f64 / 1_000.0),
        Some(us) => format!("{:.2} s", us as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_fail_the_advertised_share() {
        let plans: Vec<Plan> = (0..10_000).map(Plan::of).collect();
        let count = |p: Plan| plans.iter().filter(|&&x| x == p).count();
        assert_eq!(count(Plan::FailAlways), 100);
        assert_eq!(count(Plan::FailOnce), 1_000);
        assert_eq!(count(Plan::Succeed), 8_900);
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.50), Some(50));
        assert_eq!(percentile(&v, 0.99), Some(99));
        assert_eq!(percentile(&[7], 0.99), Some(7));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn micros_read_well() {
        assert_eq!(fmt_micros(Some(450)), "0.45 ms");
        assert_eq!(fmt_micros(Some(12_345)), "12.3 ms");
        assert_eq!(fmt_micros(Some(2_500_000)), "2.50 s");
    }
}
