//! The worker processes the scenarios start: `queue-chaos worker` runs the library's `Worker`
//! with a handler that records its effect through `complete_in_tx`, and `queue-chaos holder`
//! claims jobs, waits (while the scenario pauses it), then tries every transition with its
//! stale leases.
//!
//! A child talks to the scenario on its standard output, one line each: `READY`, `TX+` and `TX-`
//! around each completion transaction, `CLAIMED n`, and `REPORT {json}` or `RESULT {json}` at
//! the end. Its logs go to standard error.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use dbqueue::{Error, Failure, JobContext, JobError, Lease, PopRequest, Queue, Retention, Worker};
use serde::{Deserialize, Serialize};

use crate::db::{now_us, Db, Effect, Target};
use crate::runlog::{Ended, Event, RunLog, What};

/// What a job's payload tells the handler to do.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct Plan {
    /// Its number in the batch.
    pub(crate) seq: u32,
    /// Attempts 1..=fail fail with a retryable error.
    pub(crate) fail: u32,
    /// Every attempt fails permanently.
    pub(crate) permanent: bool,
    /// How long the work takes before the completion.
    pub(crate) work_ms: u32,
}

/// The settings of a worker process.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct WorkerArgs {
    /// The target, as JSON.
    #[arg(long)]
    pub(crate) target: String,
    /// The queue to work.
    #[arg(long)]
    pub(crate) queue: String,
    /// Handler slots.
    #[arg(long)]
    pub(crate) slots: usize,
    /// Lease, in milliseconds.
    #[arg(long)]
    pub(crate) lease_ms: u64,
    /// Rescue interval, in milliseconds.
    #[arg(long)]
    pub(crate) rescue_ms: u64,
    /// How long each completion transaction stays open before its commit, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub(crate) hold_ms: u64,
    /// This process's name (its worker id).
    #[arg(long)]
    pub(crate) process: String,
    /// Its run log.
    #[arg(long)]
    pub(crate) log: PathBuf,
    /// Caps the work of every job at this many milliseconds, whatever its plan says.
    #[arg(long)]
    pub(crate) work_cap_ms: Option<u32>,
    /// Each handler reads the database's clock as it starts, logs it with its start, and
    /// stores it as the job's output with the completion ([`StartClock`]): the workflows
    /// scenario checks with it that no job started before its dependencies finished.
    #[arg(long)]
    pub(crate) db_clock: bool,
    /// The log filter when `QUEUE_CHAOS_LOG` is unset (default `warn`).
    #[arg(long)]
    pub(crate) log_filter: Option<String>,
    /// Runs no retention task. The workflows scenario runs retention rounds of its own, with
    /// short ages; a worker's round (default rules, one a minute) would hold the database's
    /// retention lease for a minute and refuse them.
    #[arg(long)]
    pub(crate) no_retention: bool,
}

/// What a handler started with `--db-clock` stores as its job's output.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct StartClock {
    /// The database's clock when the handler started, in microseconds since the epoch.
    pub(crate) db_start_us: i64,
    /// The attempt that completed.
    pub(crate) attempt: u32,
}

/// The settings of a holder process.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct HolderArgs {
    /// The target, as JSON.
    #[arg(long)]
    pub(crate) target: String,
    /// The queue to claim from.
    #[arg(long)]
    pub(crate) queue: String,
    /// How many jobs to claim.
    #[arg(long)]
    pub(crate) count: usize,
    /// Lease, in milliseconds.
    #[arg(long)]
    pub(crate) lease_ms: u64,
    /// This process's name.
    #[arg(long)]
    pub(crate) process: String,
    /// Its run log.
    #[arg(long)]
    pub(crate) log: PathBuf,
}

/// What a worker process did, as its `Worker` counted it.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(crate) struct WorkerReport {
    pub(crate) claimed: u64,
    pub(crate) completed_in_tx: u64,
    pub(crate) retried: u64,
    pub(crate) dead: u64,
    pub(crate) lease_lost: u64,
    pub(crate) released: u64,
    pub(crate) abandoned: u64,
    pub(crate) pop_errors: u64,
    pub(crate) rescued: u64,
}

/// What a holder's stale transitions returned, one entry per lease and transition.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct HolderResult {
    /// `(transition, outcome)`; the outcome is `lease_lost` when refused as it must be.
    pub(crate) attempts: Vec<(String, String)>,
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn init_logs(default: Option<&str>) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("QUEUE_CHAOS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default.unwrap_or("warn")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
}

struct Shared {
    db: Db,
    /// The queue, for the database's clock (`--db-clock`).
    queue: Arc<dyn Queue>,
    db_clock: bool,
    ns: String,
    process: String,
    hold: Duration,
    work_cap_ms: Option<u32>,
    log: RunLog,
    completed: std::sync::atomic::AtomicU64,
}

impl Shared {
    fn log(&self, what: What, lease: &Lease, outcome: Option<Ended>) {
        self.log_at(what, lease, outcome, now_us(), None);
    }

    fn log_at(&self, what: What, lease: &Lease, outcome: Option<Ended>, t: i64, db_t: Option<i64>) {
        self.log.write(&Event {
            what,
            job: lease.job_id.0,
            token: lease.token,
            attempt: lease.attempt,
            process: self.process.clone(),
            t,
            exp: lease.expires_at.timestamp_micros(),
            outcome,
            db_t,
        });
    }
}

/// Runs a worker process until SIGTERM, then shuts it down gracefully and reports.
pub(crate) async fn worker(args: WorkerArgs) -> anyhow::Result<()> {
    init_logs(args.log_filter.as_deref());
    let target: Target = serde_json::from_str(&args.target).context("--target")?;
    let db = Db::connect(&target).await?;
    let shared = Arc::new(Shared {
        db: db.clone(),
        queue: db.queue(),
        db_clock: args.db_clock,
        ns: target.ns.clone(),
        process: args.process.clone(),
        hold: Duration::from_millis(args.hold_ms),
        work_cap_ms: args.work_cap_ms,
        log: RunLog::create(&args.log)?,
        completed: Default::default(),
    });
    let lease = Duration::from_millis(args.lease_ms);
    let handler_state = shared.clone();
    let mut builder = Worker::builder(db.queue(), args.queue.clone());
    if args.no_retention {
        builder = builder.retention(Retention::off());
    }
    let handle = builder
        .worker_id(args.process.clone())
        .concurrency(args.slots)
        .lease(lease)
        .rescue_interval(Some(Duration::from_millis(args.rescue_ms)))
        .poll_interval(Duration::from_millis(10), Duration::from_millis(250))
        .shutdown_timeout(Duration::from_secs(5))
        .handler_fn(move |ctx| handle(ctx, handler_state.clone()))
        .build()?
        .start();
    say("READY");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    term.recv().await;
    let report = handle.shutdown(Duration::from_secs(5)).await;
    let c = report.counters;
    let completed_in_tx = shared.completed.load(std::sync::atomic::Ordering::Relaxed);
    let out = WorkerReport {
        claimed: c.claimed,
        completed_in_tx,
        retried: c.retried,
        dead: c.dead,
        lease_lost: c.lease_lost,
        released: c.released,
        abandoned: c.abandoned,
        pop_errors: c.pop_errors,
        rescued: c.rescued,
    };
    say(&format!("REPORT {}", serde_json::to_string(&out)?));
    Ok(())
}

async fn handle(ctx: JobContext, s: Arc<Shared>) -> Result<(), JobError> {
    let lease = ctx.lease();
    let started = now_us();
    // The start is logged once the database's clock is read (when asked), in one line.
    let db_start = if s.db_clock {
        match s.queue.now().await {
            Ok(t) => Some(t.timestamp_micros()),
            Err(e) => {
                s.log_at(What::Start, &lease, None, started, None);
                s.log(What::End, &lease, Some(Ended::Error));
                return Err(JobError::retryable(format!(
                    "could not read the database clock: {e}"
                )));
            }
        }
    } else {
        None
    };
    s.log_at(What::Start, &lease, None, started, db_start);
    let plan: Plan = match ctx.payload() {
        Ok(p) => p,
        Err(e) => {
            s.log(What::End, &lease, Some(Ended::Failed));
            return Err(e);
        }
    };
    if plan.permanent {
        s.log(What::End, &lease, Some(Ended::Failed));
        return Err(JobError::permanent("planned permanent failure"));
    }
    if lease.attempt <= plan.fail {
        s.log(What::End, &lease, Some(Ended::Failed));
        return Err(JobError::retry_after(
            "planned failure",
            Duration::from_millis(20),
        ));
    }
    // The work, watching the lease so that every extension the heartbeat makes is logged.
    let work_ms = s
        .work_cap_ms
        .map_or(plan.work_ms, |cap| plan.work_ms.min(cap));
    let until = tokio::time::Instant::now() + Duration::from_millis(work_ms.into());
    let mut known = lease.expires_at;
    loop {
        let now = tokio::time::Instant::now();
        if now >= until {
            break;
        }
        tokio::time::sleep((until - now).min(Duration::from_millis(25))).await;
        let current = ctx.lease();
        if current.expires_at != known {
            known = current.expires_at;
            s.log(What::Extend, &current, None);
        }
    }
    let current = ctx.lease();
    let effect = Effect {
        attempt: current.attempt,
        process: s.process.clone(),
        started_us: started,
    };
    let output = match db_start {
        Some(db_start_us) => Some(
            serde_json::value::to_raw_value(&StartClock {
                db_start_us,
                attempt: current.attempt,
            })
            .map_err(|e| JobError::permanent(e.to_string()))?,
        ),
        None => None,
    };
    let signal = |open: bool| say(if open { "TX+" } else { "TX-" });
    match s
        .db
        .complete_with_effect(&s.ns, &current, &effect, output.as_deref(), s.hold, &signal)
        .await
    {
        Ok(()) => {
            // The job is completed: the worker must not acknowledge it again.
            ctx.mark_completed();
            s.completed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            s.log(What::End, &ctx.lease(), Some(Ended::Completed));
            Ok(())
        }
        Err(e @ (Error::LeaseLost { .. } | Error::Cancelled { .. })) => {
            s.log(What::End, &ctx.lease(), Some(Ended::LeaseLost));
            Err(JobError::retryable(e.to_string()))
        }
        Err(e) => {
            s.log(What::End, &ctx.lease(), Some(Ended::Error));
            Err(JobError::retryable(format!("completion failed: {e}")))
        }
    }
}

/// Claims `count` jobs, says `CLAIMED`, waits for a line on standard input (the scenario
/// pauses this process meanwhile and lets another worker take the jobs), then tries every
/// transition with the stale leases and reports what each returned.
pub(crate) async fn holder(args: HolderArgs) -> anyhow::Result<()> {
    init_logs(None);
    let target: Target = serde_json::from_str(&args.target).context("--target")?;
    let db = Db::connect(&target).await?;
    let queue = db.queue();
    let log = RunLog::create(&args.log)?;
    let mut leases = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while leases.len() < args.count && tokio::time::Instant::now() < deadline {
        let req = PopRequest::new(args.queue.clone())
            .limit(args.count - leases.len())
            .lease(Duration::from_millis(args.lease_ms))
            .worker(args.process.clone());
        match queue.pop(req).await {
            Ok(got) if got.is_empty() => tokio::time::sleep(Duration::from_millis(20)).await,
            Ok(got) => leases.extend(got.into_iter().map(|l| l.lease)),
            Err(e) => {
                tracing::warn!(error = %e, "holder pop failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    for lease in &leases {
        log.write(&Event {
            what: What::Start,
            job: lease.job_id.0,
            token: lease.token,
            attempt: lease.attempt,
            process: args.process.clone(),
            t: now_us(),
            exp: lease.expires_at.timestamp_micros(),
            outcome: None,
            db_t: None,
        });
    }
    say(&format!("CLAIMED {}", leases.len()));
    // The scenario stops this process here (SIGSTOP) and later continues it and writes a line.
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
    })
    .await?;
    let mut result = HolderResult::default();
    let mut note = |what: &str, r: String| result.attempts.push((what.to_owned(), r));
    for lease in &leases {
        let effect = Effect {
            attempt: lease.attempt,
            process: args.process.clone(),
            started_us: now_us(),
        };
        note(
            "complete_in_tx",
            outcome(
                db.complete_with_effect(&target.ns, lease, &effect, None, Duration::ZERO, &|_| {})
                    .await,
            ),
        );
        note(
            "extend",
            outcome(queue.extend(lease, Duration::from_secs(30)).await),
        );
        note("ack", outcome(queue.ack(lease).await));
        note(
            "ack_batch",
            match queue.ack_batch(std::slice::from_ref(lease)).await {
                Ok(0) => "lease_lost".to_owned(),
                Ok(n) => format!("acked {n}"),
                Err(e) => format!("error: {e}"),
            },
        );
        note(
            "fail(retryable)",
            outcome(queue.fail(lease, Failure::retryable("stale holder")).await),
        );
        note(
            "fail(permanent)",
            outcome(queue.fail(lease, Failure::permanent("stale holder")).await),
        );
        note("release", outcome(queue.release(lease).await));
        log.write(&Event {
            what: What::End,
            job: lease.job_id.0,
            token: lease.token,
            attempt: lease.attempt,
            process: args.process.clone(),
            t: now_us(),
            exp: lease.expires_at.timestamp_micros(),
            outcome: Some(Ended::LeaseLost),
            db_t: None,
        });
    }
    say(&format!("RESULT {}", serde_json::to_string(&result)?));
    Ok(())
}

fn outcome<T: std::fmt::Debug>(r: dbqueue::Result<T>) -> String {
    match r {
        Err(Error::LeaseLost { .. }) => "lease_lost".to_owned(),
        Err(Error::Cancelled { .. }) => "cancelled".to_owned(),
        Err(e) => format!("error: {e}"),
        Ok(v) => format!("accepted: {v:?}"),
    }
}

/// Runs a queue in this process for the scenario's own checks.
pub(crate) async fn open(target: &Target) -> anyhow::Result<(Db, Arc<dyn Queue>)> {
    let db = Db::connect(target).await?;
    let q = db.queue();
    Ok((db, q))
}
