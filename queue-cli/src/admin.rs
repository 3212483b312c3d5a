//! The operator's subcommands: migrate, push, stats, list, retry, cancel, prune.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use queue_core::validate::redact_url;
use queue_core::{
    validate, Job, JobId, JobState, Limits, ListRequest, NewJob, PruneRequest, Queue, QueueStats,
};

use crate::duration;
use crate::failure::CliError;
use crate::payload;
use crate::table;

/// Which database to use.
#[derive(Debug, Args)]
pub(crate) struct Target {
    /// Database URL: sqlite://file.db, postgres://..., mysql://..., mariadb://..., mssql://... or
    /// sqlserver://... (or an ADO.NET connection string)
    #[arg(
        long,
        env = "QUEUE_URL",
        default_value = "sqlite://queue.db",
        hide_env_values = true
    )]
    pub(crate) url: String,
    /// PostgreSQL and SQL Server only: the schema that holds the queue's tables [default: queue].
    #[arg(long, env = "QUEUE_SCHEMA", hide_env_values = true)]
    pub(crate) schema: Option<String>,
    /// MySQL/MariaDB only: the prefix of the queue's table names [default: queue_].
    #[arg(long, env = "QUEUE_TABLE_PREFIX", hide_env_values = true)]
    pub(crate) table_prefix: Option<String>,
}

impl Target {
    pub(crate) async fn connect(&self) -> Result<Arc<dyn Queue>, CliError> {
        let options = dbqueue::Options {
            schema: self.schema.clone(),
            table_prefix: self.table_prefix.clone(),
            ..dbqueue::Options::default()
        };
        Ok(dbqueue::connect_with(&self.url, options).await?)
    }
}

/// `push`.
#[derive(Debug, Args)]
pub(crate) struct PushArgs {
    #[command(flatten)]
    target: Target,
    /// The queue to push to.
    #[arg(long)]
    queue: String,
    /// The job's payload, as JSON; `-` reads it from standard input [default: {}].
    #[arg(long, allow_hyphen_values = true, conflicts_with = "payload_file")]
    payload: Option<String>,
    /// Read the payload (JSON) from this file; `-` is standard input. For payloads too large
    /// to pass as an argument.
    #[arg(long, value_name = "PATH", allow_hyphen_values = true)]
    payload_file: Option<PathBuf>,
    /// Higher runs first.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// Not claimable until this long from now, e.g. 500ms, 5s, 2m, 1h, 7d.
    #[arg(long, allow_hyphen_values = true)]
    delay: Option<String>,
    /// Attempts before a failing job goes dead [default: 25].
    #[arg(long, allow_negative_numbers = true)]
    max_attempts: Option<i64>,
    /// At most one live job per queue has this key.
    #[arg(long)]
    dedup_key: Option<String>,
}

/// `stats`.
#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    target: Target,
    /// Only this queue.
    #[arg(long)]
    queue: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    target: Target,
    /// Only this queue.
    #[arg(long)]
    queue: Option<String>,
    /// Only this state: pending, running, completed, dead or cancelled.
    #[arg(long)]
    state: Option<String>,
    /// Most jobs to show (1..=1000).
    #[arg(long, default_value_t = 20, allow_negative_numbers = true)]
    limit: i64,
    /// Only jobs older than this one: the next page after a page that ended with this id.
    #[arg(long, value_name = "ID")]
    before: Option<String>,
    /// Print JSON (with payloads) instead of a table.
    #[arg(long)]
    json: bool,
}

/// `retry` and `cancel`.
#[derive(Debug, Args)]
pub(crate) struct IdArgs {
    #[command(flatten)]
    target: Target,
    /// The job's id (a UUID, as printed by `push` and `list`).
    id: String,
}

/// `prune`.
#[derive(Debug, Args)]
pub(crate) struct PruneArgs {
    #[command(flatten)]
    target: Target,
    /// Delete jobs that finished longer ago than this, e.g. 7d, 12h.
    #[arg(long, allow_hyphen_values = true)]
    older_than: String,
    /// Only jobs in these finished states (completed, dead, cancelled; repeat or separate with
    /// commas) [default: all three].
    #[arg(long, value_delimiter = ',')]
    state: Vec<String>,
    /// Only this queue.
    #[arg(long)]
    queue: Option<String>,
}

pub(crate) async fn migrate(target: Target) -> Result<(), CliError> {
    let queue = target.connect().await?;
    queue.migrate().await?;
    println!("migrated {}", redact_url(&target.url));
    Ok(())
}

pub(crate) async fn push(args: PushArgs) -> Result<(), CliError> {
    // Everything is checked before the database is touched.
    let limits = Limits::default();
    let payload = payload::from_args(
        args.payload.as_deref(),
        args.payload_file.as_deref(),
        &limits,
    )?;
    let mut job = NewJob::from_json(args.queue.as_str(), &payload)?.priority(args.priority);
    if let Some(delay) = &args.delay {
        job = job.delay(duration::parse("delay", delay)?);
    }
    if let Some(n) = args.max_attempts {
        let n = u32::try_from(n).map_err(|_| {
            CliError::usage(if n < 0 {
                "invalid max_attempts: must be at least 1".to_owned()
            } else {
                format!(
                    "invalid max_attempts: must be at most {}",
                    validate::MAX_ATTEMPTS
                )
            })
        })?;
        job = job.max_attempts(n);
    }
    if let Some(key) = &args.dedup_key {
        job = job.dedup_key(key.as_str());
    }
    job.validate(&limits)?;
    let queue = args.target.connect().await?;
    let id = queue.push(job).await?;
    println!("{id}");
    Ok(())
}

pub(crate) async fn stats(args: StatsArgs) -> Result<(), CliError> {
    if let Some(q) = &args.queue {
        validate::queue_name(q)?;
    }
    let queue = args.target.connect().await?;
    let stats = queue.stats(args.queue.as_deref()).await?;
    if args.json {
        let rows: Vec<_> = stats.iter().map(stats_json).collect();
        println!("{}", serde_json::Value::Array(rows));
    } else if stats.is_empty() {
        println!("no jobs");
    } else {
        print!("{}", stats_table(&stats));
    }
    Ok(())
}

/// The names of a queue's counts, in the order the stats table and the dashboard show them.
pub(crate) const COUNT_COLUMNS: [&str; 6] = [
    "available",
    "scheduled",
    "running",
    "completed",
    "dead",
    "cancelled",
];

/// The counts of `s`, in the order of [`COUNT_COLUMNS`].
pub(crate) fn counts(s: &QueueStats) -> [u64; 6] {
    [
        s.available,
        s.scheduled,
        s.running,
        s.completed,
        s.dead,
        s.cancelled,
    ]
}

/// The `stats` table, also printed by the demo.
pub(crate) fn stats_table(stats: &[QueueStats]) -> String {
    let rows: Vec<Vec<String>> = stats
        .iter()
        .map(|s| {
            std::iter::once(s.queue.clone())
                .chain(counts(s).iter().map(u64::to_string))
                .collect()
        })
        .collect();
    let header: Vec<&str> = std::iter::once("queue").chain(COUNT_COLUMNS).collect();
    table::render(&header, &rows)
}

fn stats_json(s: &QueueStats) -> serde_json::Value {
    serde_json::json!({
        "queue": s.queue,
        "available": s.available,
        "scheduled": s.scheduled,
        "running": s.running,
        "completed": s.completed,
        "dead": s.dead,
        "cancelled": s.cancelled,
    })
}

pub(crate) async fn list(args: ListArgs) -> Result<(), CliError> {
    let req = ListRequest {
        queue: args.queue.clone(),
        state: args
            .state
            .as_deref()
            .map(str::parse::<JobState>)
            .transpose()?,
        limit: usize::try_from(args.limit).unwrap_or(0),
        before: args
            .before
            .as_deref()
            .map(|id| {
                id.trim()
                    .parse::<JobId>()
                    .map_err(|_| queue_core::Error::invalid("before", "must be a job id (a UUID)"))
            })
            .transpose()?,
    };
    req.validate()?;
    let queue = args.target.connect().await?;
    let jobs = queue.list(req).await?;
    if args.json {
        let rows: Vec<_> = jobs.iter().map(job_json).collect();
        println!("{}", serde_json::Value::Array(rows));
    } else if jobs.is_empty() {
        println!("no jobs");
    } else {
        let rows: Vec<Vec<String>> = jobs.iter().map(job_row).collect();
        print!(
            "{}",
            table::render(
                &[
                    "id",
                    "queue",
                    "state",
                    "attempts",
                    "priority",
                    "run_at",
                    "created_at",
                    "last_error",
                ],
                &rows,
            )
        );
    }
    Ok(())
}

const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.3f";

fn job_row(job: &Job) -> Vec<String> {
    vec![
        job.id.to_string(),
        table::clip(&job.queue, 24),
        job.state.to_string(),
        format!("{}/{}", job.attempts, job.max_attempts),
        job.priority.to_string(),
        job.run_at.format(TIME_FORMAT).to_string(),
        job.created_at.format(TIME_FORMAT).to_string(),
        job.last_error
            .as_deref()
            .map(|e| table::clip(e, 48))
            .unwrap_or_default(),
    ]
}

fn job_json(job: &Job) -> serde_json::Value {
    serde_json::json!({
        "id": job.id,
        "queue": job.queue,
        "state": job.state,
        "payload": job.payload_value(),
        "priority": job.priority,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "run_at": job.run_at,
        "lease_expires_at": job.lease_expires_at,
        "worker": job.worker,
        "last_error": job.last_error,
        "dedup_key": job.dedup_key,
        "created_at": job.created_at,
        "updated_at": job.updated_at,
        "finished_at": job.finished_at,
    })
}

pub(crate) async fn retry(args: IdArgs) -> Result<(), CliError> {
    let id: JobId = args.id.trim().parse()?;
    let queue = args.target.connect().await?;
    queue.retry(id).await?;
    println!("retried {id}: pending again, attempts reset");
    Ok(())
}

pub(crate) async fn cancel(args: IdArgs) -> Result<(), CliError> {
    let id: JobId = args.id.trim().parse()?;
    let queue = args.target.connect().await?;
    queue.cancel(id).await?;
    println!("cancelled {id}");
    Ok(())
}

pub(crate) async fn prune(args: PruneArgs) -> Result<(), CliError> {
    let older_than = duration::parse("older_than", &args.older_than)?;
    let mut req = PruneRequest::older_than(older_than);
    if !args.state.is_empty() {
        req.states = args
            .state
            .iter()
            .map(|s| s.trim().parse::<JobState>())
            .collect::<Result<_, _>>()?;
    }
    req.queue = args.queue.clone();
    req.validate()?;
    let queue = args.target.connect().await?;
    let n = queue.prune(req).await?;
    println!("pruned {n} job{}", if n == 1 { "" } else { "s" });
    Ok(())
}
