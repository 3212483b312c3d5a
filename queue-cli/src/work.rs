//! `work`: a smoke worker that logs each job's payload and completes it, until Ctrl-C.

use clap::Args;
use queue_core::validate::redact_url;
use queue_core::{validate, JobContext, JobError, Retention, Worker};

use crate::admin::Target;
use crate::duration;
use crate::failure::CliError;
use crate::table;
use crate::LOG_TARGET;

/// `work`.
#[derive(Debug, Args)]
pub(crate) struct WorkArgs {
    #[command(flatten)]
    target: Target,
    /// The queue to work on.
    #[arg(long)]
    queue: String,
    /// Handlers running at once.
    #[arg(long, default_value_t = 10)]
    concurrency: usize,
    /// How long each claim lasts before it must be extended, e.g. 30s.
    #[arg(long, default_value = "30s")]
    lease: String,
    /// How long running jobs may take to finish after Ctrl-C before they are released.
    #[arg(long, default_value = "30s")]
    shutdown_timeout: String,
    /// Run no retention task. By default the worker deletes completed and cancelled jobs 24 h
    /// and dead jobs 7 days after they finished, of every queue, in one round a minute shared
    /// with every other worker of the database.
    #[arg(long)]
    no_retention: bool,
}

pub(crate) async fn run(args: WorkArgs) -> Result<(), CliError> {
    validate::queue_name(&args.queue)?;
    let lease = duration::parse("lease", &args.lease)?;
    let shutdown_timeout = duration::parse("shutdown_timeout", &args.shutdown_timeout)?;
    let queue = args.target.connect().await?;
    // Surfaces a missing schema or an unreachable server now, as one error, rather than as
    // failed pops inside the running worker.
    let stats = queue.stats(Some(&args.queue)).await?;
    let controls = stats.iter().find(|s| s.queue == args.queue);
    if controls.is_some_and(|s| s.paused) {
        eprintln!(
            "note: queue {} is paused: its jobs wait until `queue resume {}`",
            args.queue, args.queue
        );
    }
    if let Some(n) = controls.and_then(|s| s.concurrency_limit) {
        eprintln!(
            "note: queue {} has a concurrency limit of {n} across every worker",
            args.queue
        );
    }
    let worker = Worker::builder(queue.clone(), args.queue.as_str())
        .concurrency(args.concurrency)
        .lease(lease)
        .shutdown_timeout(shutdown_timeout)
        .retention(if args.no_retention {
            Retention::off()
        } else {
            Retention::default()
        })
        .handler_fn(log_payload)
        .build()?;
    eprintln!(
        "working on queue {} of {} with concurrency {}; press Ctrl-C to stop",
        args.queue,
        redact_url(&args.target.url),
        args.concurrency
    );
    let report = worker.run_until(stop_signal()).await;
    let c = report.counters;
    eprintln!(
        "stopped after {:.1?}: {} completed, {} retried, {} dead, {} released, {} lease lost",
        report.elapsed, c.completed, c.retried, c.dead, c.released, c.lease_lost
    );
    if !report.all_settled() {
        return Err(CliError::other(format!(
            "{} job(s) were still running at the deadline; they return to pending when their \
             lease expires",
            c.claimed.saturating_sub(c.settled())
        )));
    }
    Ok(())
}

/// The smoke handler: logs the job and completes it.
async fn log_payload(ctx: JobContext) -> Result<(), JobError> {
    tracing::info!(
        target: LOG_TARGET,
        job = %ctx.id(),
        queue = %ctx.job.queue,
        kind = ctx.kind().unwrap_or("-"),
        attempt = ctx.attempt(),
        payload = %table::clip(ctx.job.payload.get(), 1000),
        "ran job"
    );
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM.
async fn stop_signal() {
    crate::signal::stop_requested().await;
    eprintln!("stopping: no new jobs are claimed; running jobs may finish");
}
