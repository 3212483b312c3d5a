//! `queue`: operate a durable job queue stored in the database you already run.
//!
//! Every subcommand takes `--url` (or `QUEUE_URL`); the default is the SQLite file `queue.db`
//! in the current directory. Errors are printed as one line on stderr; the exit status is 2 for
//! bad input and 1 for every other failure.
//!
//! The command is this package's binary; the library holds its code so that the package's
//! integration tests can reach the dashboard's routes. It is not a stable API.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{ArgAction, Parser, Subcommand};

mod admin;
mod demo;
mod duration;
mod failure;
mod maintenance;
mod payload;
mod schedules;
pub mod serve;
mod signal;
mod table;
mod work;
mod workflows;

use failure::CliError;

/// The log target of the command-line tool.
const LOG_TARGET: &str = "queue::cli";

/// Operate a durable job queue stored in SQLite, PostgreSQL, MySQL/MariaDB or SQL Server.
#[derive(Debug, Parser)]
#[command(name = "queue", version, about, propagate_version = true)]
struct Cli {
    /// More log output on stderr (-v: info, -vv: debug; the demo shows the worker's per-job
    /// log only with -v); RUST_LOG overrides it.
    #[arg(short, long, global = true, action = ArgAction::Count)]
    verbose: u8,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run thousands of jobs (some failing and retrying) through a fresh embedded SQLite queue
    /// and print completed, retried, dead, throughput and latency.
    Demo(demo::DemoArgs),
    /// Create or upgrade the queue's tables (idempotent).
    Migrate(admin::Target),
    /// Push one job and print its id. With a --unique option, print the id of the job that
    /// stands for the push (the new one, or the one that holds its unique key), and say on
    /// stderr whether it was inserted, met an existing job, or replaced a pending one.
    Push(admin::PushArgs),
    /// Print job counts per queue and state, and whether each queue is paused or limited.
    Stats(admin::StatsArgs),
    /// List jobs, newest first.
    List(admin::ListArgs),
    /// Show one job: every field, its payload, metadata, output and the history of its failed
    /// attempts; for a step of a workflow, its workflow, step and what it depends on.
    Get(admin::GetArgs),
    /// List workflows (jobs pushed together, some waiting for others), newest first: name,
    /// status (active, finished, or open: a batch that takes more jobs) and how many of their
    /// jobs are in each state.
    Workflows(workflows::ListArgs),
    /// Show one workflow: each step's job, its state, queue and kind, what it waits for, and
    /// which failed dependency cancelled it.
    Workflow(workflows::ShowArgs),
    /// Bring a dead or cancelled job back to pending.
    Retry(admin::IdArgs),
    /// Cancel a waiting, pending or running job.
    Cancel(admin::IdArgs),
    /// Change when a pending job runs (`--delay`, `--at`) or its priority (`--priority`).
    Reschedule(admin::RescheduleArgs),
    /// Delete finished jobs older than a given age.
    Prune(admin::PruneArgs),
    /// Cancel, retry or delete every job a filter matches (queue, state, kind, age): prints how
    /// many match and asks before changing anything (--yes does not ask).
    Bulk(maintenance::BulkArgs),
    /// Run one round of the retention task now: delete completed and cancelled jobs 24 h and
    /// dead jobs 7 days after they finished (or as the options say). Workers run it every
    /// minute by themselves, one process at a time.
    Retention(maintenance::RetentionArgs),
    /// Pause a queue: no job of it is given out (to any worker, in any process) until it is
    /// resumed; jobs already running finish.
    Pause(admin::QueueArgs),
    /// Resume a paused queue.
    Resume(admin::QueueArgs),
    /// Set a queue's concurrency limit (at most LIMIT of its jobs run at once, across every
    /// worker and process; `none` removes it) and its rate limit (`--rate N/PERIOD`: at most N
    /// start per window of PERIOD; `--rate none` removes it).
    Limit(admin::LimitArgs),
    /// Run a worker that logs each job's payload, until Ctrl-C; it also runs the retention
    /// task (see `retention`) unless given --no-retention.
    Work(work::WorkArgs),
    /// Serve the web dashboard: every queue's counts and throughput, job lists, job pages,
    /// and actions (retry, cancel, reschedule, bulk retry, cancel, retry or delete every job of
    /// a list after a confirmation, prune, pause, resume, concurrency limits), on
    /// 127.0.0.1:8787 by default.
    Serve(serve::ServeArgs),
    /// Periodic jobs: list the schedules (the default), `add` or `remove` one, or `run` a
    /// scheduler that fires them.
    Schedules(schedules::SchedulesArgs),
}

/// Runs the `queue` command with the process's arguments and returns its exit status.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    // The demo's failures are deliberate and counted in its summary, so the worker's log of
    // each one is only shown on request.
    let quiet_worker = matches!(cli.command, Command::Demo(_));
    init_tracing(cli.verbose, quiet_worker);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return report(CliError::other(format!("cannot start the runtime: {e}"))),
    };
    match runtime.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(e),
    }
}

async fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Demo(args) => demo::run(args).await,
        Command::Migrate(target) => admin::migrate(target).await,
        Command::Push(args) => admin::push(args).await,
        Command::Stats(args) => admin::stats(args).await,
        Command::List(args) => admin::list(args).await,
        Command::Get(args) => admin::get(args).await,
        Command::Workflows(args) => workflows::list(args).await,
        Command::Workflow(args) => workflows::show(args).await,
        Command::Reschedule(args) => admin::reschedule(args).await,
        Command::Retry(args) => admin::retry(args).await,
        Command::Cancel(args) => admin::cancel(args).await,
        Command::Prune(args) => admin::prune(args).await,
        Command::Bulk(args) => maintenance::bulk(args).await,
        Command::Retention(args) => maintenance::retention(args).await,
        Command::Pause(args) => admin::pause(args).await,
        Command::Resume(args) => admin::resume(args).await,
        Command::Limit(args) => admin::limit(args).await,
        Command::Work(args) => work::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Schedules(args) => schedules::run(args).await,
    }
}

fn report(e: CliError) -> ExitCode {
    eprintln!("error: {}", e.message());
    ExitCode::from(e.code())
}

/// Help and version go out as clap renders them; a usage error becomes one line, exit 2.
fn clap_exit(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            // The first paragraph is the message (a list of missing arguments included); the
            // usage and tips that follow are one `--help` away.
            let rendered = e.render().to_string();
            let line = rendered
                .trim()
                .split("\n\n")
                .next()
                .unwrap_or_default()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            if line.is_empty() {
                eprintln!("error: invalid arguments; see --help");
            } else if line.starts_with("error:") {
                eprintln!("{line}");
            } else {
                eprintln!("error: {line}");
            }
            ExitCode::from(2)
        }
    }
}

fn init_tracing(verbose: u8, quiet_worker: bool) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 if quiet_worker => "warn,queue::cli=info,queue::worker=off",
        0 => "warn,queue::cli=info,queue::scheduler=info",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn usage_errors_are_parsed_not_panicked() {
        let err = Cli::try_parse_from(["queue", "push", "--payload", "{}"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
        let ok = Cli::try_parse_from(["queue", "push", "--queue", "q", "--delay", "-5s"]).unwrap();
        assert!(matches!(ok.command, Command::Push(_)));
        for args in [
            &["queue", "schedules"][..],
            &["queue", "schedules", "--json"],
            &["queue", "schedules", "list"],
            &["queue", "schedules", "remove", "nightly"],
            &["queue", "schedules", "run"],
            &[
                "queue",
                "schedules",
                "add",
                "nightly",
                "--cron",
                "30 2 * * *",
                "--queue",
                "q",
                "--catch-up",
                "0",
            ],
        ] {
            let parsed = Cli::try_parse_from(args).unwrap();
            assert!(matches!(parsed.command, Command::Schedules(_)), "{args:?}");
        }
        let err =
            Cli::try_parse_from(["queue", "schedules", "add", "n", "--queue", "q"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn queue_controls_parse() {
        for args in [
            &["queue", "pause", "emails"][..],
            &["queue", "resume", "emails", "--url", "sqlite://x.db"],
            &["queue", "limit", "emails", "5"],
            &["queue", "limit", "emails", "none"],
            &["queue", "limit", "--url", "sqlite://x.db", "emails", "0"],
            &["queue", "limit", "emails", "--rate", "100/1m"],
            &["queue", "limit", "emails", "5", "--rate", "none"],
        ] {
            let parsed = Cli::try_parse_from(args).unwrap();
            assert!(
                matches!(
                    parsed.command,
                    Command::Pause(_) | Command::Resume(_) | Command::Limit(_)
                ),
                "{args:?}"
            );
        }
        for bad in ["abc", "-1", "2.5", ""] {
            let err = Cli::try_parse_from(["queue", "limit", "emails", bad]).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ValueValidation, "{bad:?}");
            assert!(err.to_string().contains("concurrency_limit"), "{err}");
        }
        let err = Cli::try_parse_from(["queue", "limit", "emails"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
        let err = Cli::try_parse_from(["queue", "pause"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn bulk_retention_and_unique_pushes_parse() {
        for args in [
            &["queue", "bulk", "cancel"][..],
            &[
                "queue", "bulk", "retry", "--queue", "q", "--state", "dead", "--yes",
            ],
            &[
                "queue",
                "bulk",
                "delete",
                "--kind",
                "k",
                "--older-than",
                "7d",
                "-y",
            ],
            &["queue", "retention"],
            &["queue", "retention", "--completed", "1h", "--dead", "keep"],
            &["queue", "work", "--queue", "q", "--no-retention"],
            &[
                "queue",
                "push",
                "--queue",
                "q",
                "--unique",
                "--unique-by-queue",
            ],
            &[
                "queue",
                "push",
                "--queue",
                "q",
                "--unique-fields",
                "a,b",
                "--unique-states",
                "pending,running,dead",
                "--unique-period",
                "1h",
                "--unique-replace",
            ],
        ] {
            Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        let err = Cli::try_parse_from(["queue", "bulk", "purge"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ValueValidation);
        assert!(err.to_string().contains("action must be cancel"), "{err}");
        let err = Cli::try_parse_from(["queue", "bulk"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
        let err = Cli::try_parse_from([
            "queue",
            "push",
            "--queue",
            "q",
            "--unique",
            "--unique-fields",
            "a",
        ])
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ArgumentConflict);
    }
}
