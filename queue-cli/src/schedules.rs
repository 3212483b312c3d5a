//! `schedules`: list the periodic schedules stored in the database, add and remove an
//! operator's schedules, and run a scheduler that fires them.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};
use queue_core::periodic::{Misfire, Origin, PeriodicJob, Registered, Registration, Scheduler};
use queue_core::validate::redact_url;
use queue_core::{validate, JobState, Limits, ScheduleInfo};

use crate::admin::Target;
use crate::failure::CliError;
use crate::payload;
use crate::table;

/// `schedules`: without a subcommand, the listing.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct SchedulesArgs {
    #[command(flatten)]
    list: ListArgs,
    #[command(subcommand)]
    command: Option<SchedulesCommand>,
}

#[derive(Debug, Subcommand)]
enum SchedulesCommand {
    /// List every schedule: expression, time zone, queue, next and last slot, and how the last
    /// slot's job ended (the default).
    List(ListArgs),
    /// Register a schedule that fires until removed (changing it when the name exists).
    Add(AddArgs),
    /// Remove a schedule registered with `add` (or one whose process stopped renewing it).
    Remove(RemoveArgs),
    /// Fire every schedule of the database at its slots, until Ctrl-C.
    Run(RunArgs),
}

/// `schedules list`.
#[derive(Debug, Args)]
struct ListArgs {
    #[command(flatten)]
    target: Target,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `schedules add`.
#[derive(Debug, Args)]
struct AddArgs {
    #[command(flatten)]
    target: Target,
    /// The schedule's name (A-Z a-z 0-9 _ . : -, at most 128 characters).
    name: String,
    /// Cron expression: 5 fields (minute hour day-of-month month day-of-week), or 6 with
    /// seconds first, e.g. "30 2 * * *" or "*/10 * * * * *".
    #[arg(long, allow_hyphen_values = true)]
    cron: String,
    /// The queue its jobs go to.
    #[arg(long)]
    queue: String,
    /// The kind of its jobs: the handler a worker of several kinds runs them with (none by
    /// default: the worker's default handler).
    #[arg(long)]
    kind: Option<String>,
    /// The IANA time zone of the expression's wall clock, e.g. Europe/Berlin.
    #[arg(long, default_value = "UTC")]
    time_zone: String,
    /// The payload of its jobs, as JSON; `-` reads it from standard input [default: {}].
    #[arg(long, allow_hyphen_values = true, conflicts_with = "payload_file")]
    payload: Option<String>,
    /// Read the payload (JSON) from this file; `-` is standard input.
    #[arg(long, value_name = "PATH", allow_hyphen_values = true)]
    payload_file: Option<PathBuf>,
    /// The priority of its jobs (higher runs first).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// Attempts of its jobs before a failing one goes dead [default: 25].
    #[arg(long, allow_negative_numbers = true)]
    max_attempts: Option<i64>,
    /// After an outage, enqueue up to this many missed slots (the latest ones); without it only
    /// the latest missed slot is enqueued.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    catch_up: Option<i64>,
}

/// `schedules remove`.
#[derive(Debug, Args)]
struct RemoveArgs {
    #[command(flatten)]
    target: Target,
    /// The schedule's name.
    name: String,
}

/// `schedules run`.
#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    target: Target,
}

pub(crate) async fn run(args: SchedulesArgs) -> Result<(), CliError> {
    match args.command {
        None => list(args.list).await,
        Some(SchedulesCommand::List(a)) => list(a).await,
        Some(SchedulesCommand::Add(a)) => add(a).await,
        Some(SchedulesCommand::Remove(a)) => remove(a).await,
        Some(SchedulesCommand::Run(a)) => run_scheduler(a).await,
    }
}

/// A count argument as a `u32`, or the rule it broke.
fn count(field: &str, n: i64, max: u32) -> Result<u32, CliError> {
    u32::try_from(n).ok().filter(|v| *v <= max).ok_or_else(|| {
        CliError::from(queue_core::Error::invalid(
            field,
            if n < 0 {
                "must not be negative".to_owned()
            } else {
                format!("must be at most {max}")
            },
        ))
    })
}

async fn add(args: AddArgs) -> Result<(), CliError> {
    // Everything is checked before the database is touched.
    let limits = Limits::default();
    let payload = payload::from_args(
        args.payload.as_deref(),
        args.payload_file.as_deref(),
        &limits,
    )?;
    let mut job = PeriodicJob::from_json(
        args.name.as_str(),
        args.cron.as_str(),
        args.queue.as_str(),
        &payload,
    )?
    .time_zone(args.time_zone.as_str())
    .priority(args.priority);
    if let Some(kind) = args.kind {
        job = job.kind(kind);
    }
    if let Some(n) = args.max_attempts {
        job = job.max_attempts(count("max_attempts", n, validate::MAX_ATTEMPTS)?);
    }
    if let Some(n) = args.catch_up {
        let max = count("catch_up", n, queue_core::periodic::MAX_CATCH_UP)?;
        job = job.misfire(Misfire::CatchUp { max });
    }
    job.validate(&limits)?;
    let queue = args.target.connect().await?;
    let now = queue.now().await?;
    let what = queue
        .schedule_register(&job, Registration::Operator, now)
        .await?;
    let verb = match what {
        Registered::Created => "added",
        Registered::Changed => "changed",
        Registered::Unchanged => "unchanged:",
    };
    let next = job
        .cadence()?
        .next_after(now)
        .map_or_else(|| "never".to_owned(), |t| format!("{} (UTC)", time(t)));
    println!("{verb} schedule {}; next slot {next}", job.name());
    Ok(())
}

async fn remove(args: RemoveArgs) -> Result<(), CliError> {
    validate::schedule_name(&args.name)?;
    let queue = args.target.connect().await?;
    let now = queue.now().await?;
    queue.schedule_remove(&args.name, now).await?;
    println!("removed schedule {}", args.name);
    Ok(())
}

async fn list(args: ListArgs) -> Result<(), CliError> {
    let queue = args.target.connect().await?;
    let now = queue.now().await?;
    let schedules = queue.schedules().await?;
    if args.json {
        let rows: Vec<_> = schedules.iter().map(|s| json(s, now)).collect();
        println!("{}", serde_json::Value::Array(rows));
    } else if schedules.is_empty() {
        println!("no schedules");
    } else {
        let rows: Vec<Vec<String>> = schedules.iter().map(|s| row(s, now)).collect();
        print!(
            "{}",
            table::render(
                &[
                    "name",
                    "expression",
                    "time_zone",
                    "queue",
                    "registered",
                    "next (UTC)",
                    "last slot (UTC)",
                    "last job",
                ],
                &rows,
            )
        );
    }
    Ok(())
}

async fn run_scheduler(args: RunArgs) -> Result<(), CliError> {
    let queue = args.target.connect().await?;
    // Surfaces missing tables or an unreachable server now, as one error.
    let schedules = queue.schedules().await?;
    let scheduler = Scheduler::builder(queue).build()?;
    eprintln!(
        "firing the {} schedule(s) of {} at their slots; press Ctrl-C to stop",
        schedules.len(),
        redact_url(&args.target.url)
    );
    scheduler.run_until(crate::signal::stop_requested()).await;
    eprintln!("stopped");
    Ok(())
}

const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S";

fn time(t: DateTime<Utc>) -> String {
    t.format(TIME_FORMAT).to_string()
}

/// Who registered it, and whether it still fires.
pub(crate) fn registered(s: &ScheduleInfo, now: DateTime<Utc>) -> &'static str {
    match (s.origin, s.is_active(now)) {
        (Origin::Operator, _) => "operator",
        (Origin::Code, true) => "code",
        (Origin::Code, false) => "code, lapsed",
    }
}

/// How the last slot's job ended, in words.
pub(crate) fn last_job(s: &ScheduleInfo) -> &'static str {
    match (s.last_job, s.last_job_state) {
        (None, _) => "-",
        (Some(_), None) => "unknown (pruned)",
        (Some(_), Some(JobState::Completed)) => "succeeded",
        (Some(_), Some(JobState::Dead)) => "failed (dead)",
        (Some(_), Some(JobState::Cancelled)) => "cancelled",
        (Some(_), Some(JobState::Waiting)) => "waiting",
        (Some(_), Some(JobState::Pending)) => "pending",
        (Some(_), Some(JobState::Running)) => "running",
    }
}

/// The next slot of an active schedule.
pub(crate) fn next(s: &ScheduleInfo, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if s.is_active(now) {
        s.next_slot(now).ok().flatten()
    } else {
        None
    }
}

fn row(s: &ScheduleInfo, now: DateTime<Utc>) -> Vec<String> {
    vec![
        s.job.name().to_owned(),
        s.job.expression().to_owned(),
        s.job.time_zone_name().to_owned(),
        table::clip(s.job.queue(), 24),
        registered(s, now).to_owned(),
        next(s, now).map_or_else(|| "-".to_owned(), time),
        s.last_slot.map_or_else(|| "-".to_owned(), time),
        last_job(s).to_owned(),
    ]
}

fn json(s: &ScheduleInfo, now: DateTime<Utc>) -> serde_json::Value {
    let misfire = s.job.misfire_policy();
    serde_json::json!({
        "name": s.job.name(),
        "expression": s.job.expression(),
        "time_zone": s.job.time_zone_name(),
        "queue": s.job.queue(),
        "kind": s.job.kind_value(),
        "payload": serde_json::from_str::<serde_json::Value>(s.job.payload_json()).unwrap_or(serde_json::Value::Null),
        "priority": s.job.priority_value(),
        "max_attempts": s.job.max_attempts_value(),
        "misfire": misfire.as_str(),
        "catch_up": match misfire { Misfire::CatchUp { max } => Some(max), Misfire::Skip => None },
        "origin": s.origin.as_str(),
        "active": s.is_active(now),
        "expires_at": s.expires_at,
        "next_slot": next(s, now),
        "last_slot": s.last_slot,
        "last_job": s.last_job,
        "last_job_state": s.last_job_state,
    })
}
