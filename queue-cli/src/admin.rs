//! The operator's subcommands: migrate, push, stats, list, get, retry, cancel, reschedule,
//! prune, and the queue controls pause, resume and limit.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use queue_core::validate::redact_url;
use queue_core::{
    validate, Error, Job, JobId, JobState, Limits, ListRequest, NewJob, PruneRequest, Queue,
    QueueStats, Reschedule, MAX_CONCURRENCY_LIMIT,
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
    /// The job's kind: which handler of a worker runs it.
    #[arg(long)]
    kind: Option<String>,
    /// Metadata stored with the job, as a JSON object.
    #[arg(long, allow_hyphen_values = true)]
    meta: Option<String>,
    /// The longest one attempt may run, e.g. 30s, 5m (a worker stops the handler past it).
    #[arg(long, allow_hyphen_values = true)]
    timeout: Option<String>,
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
    /// Only jobs of this kind.
    #[arg(long)]
    kind: Option<String>,
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

/// `get`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    target: Target,
    /// The job's id (a UUID, as printed by `push` and `list`).
    id: String,
    /// Print JSON (every field) instead of text.
    #[arg(long)]
    json: bool,
}

/// `reschedule`.
#[derive(Debug, Args)]
pub(crate) struct RescheduleArgs {
    #[command(flatten)]
    target: Target,
    /// The id of a pending job.
    id: String,
    /// Claimable this long from now, e.g. 0s (now), 30m, 2h.
    #[arg(long, allow_hyphen_values = true, conflicts_with = "at")]
    delay: Option<String>,
    /// Claimable at this time (RFC 3339, e.g. 2026-12-01T08:00:00Z).
    #[arg(long)]
    at: Option<String>,
    /// Its new priority (higher runs first).
    #[arg(long, allow_negative_numbers = true)]
    priority: Option<i32>,
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

/// `pause` and `resume`.
#[derive(Debug, Args)]
pub(crate) struct QueueArgs {
    #[command(flatten)]
    target: Target,
    /// The queue.
    queue: String,
}

/// `limit`.
#[derive(Debug, Args)]
pub(crate) struct LimitArgs {
    #[command(flatten)]
    target: Target,
    /// The queue.
    queue: String,
    /// At most this many of the queue's jobs run at once, across every worker and process
    /// (1 to 1000000); `none` removes the limit.
    #[arg(value_name = "LIMIT", value_parser = limit_arg, allow_negative_numbers = true)]
    limit: LimitArg,
}

/// The checked text of a concurrency limit: a number (which the library may still refuse, as
/// it refuses 0) or `none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LimitArg(Option<u32>);

/// Reads a concurrency limit as the command line and the dashboard take it: a whole number, or
/// `none` (no limit). Only the text is checked here; the rules on the number (at least 1, at
/// most [`MAX_CONCURRENCY_LIMIT`]) are the library's, so that they are stated in one place.
pub(crate) fn parse_limit(text: &str) -> Result<Option<u32>, Error> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return match text.parse::<u32>() {
            Ok(n) => Ok(Some(n)),
            // More digits than any limit has: the library's rule, in its words.
            Err(_) => Err(Error::invalid(
                "concurrency_limit",
                format!(
                    "must be at most {MAX_CONCURRENCY_LIMIT} (got {})",
                    crate::table::clip(text, 24)
                ),
            )),
        };
    }
    Err(Error::invalid(
        "concurrency_limit",
        format!(
            "must be a whole number of jobs from 1 to {MAX_CONCURRENCY_LIMIT}, or none to remove \
             the limit"
        ),
    ))
}

/// The clap parser of `limit`'s LIMIT: bad text is a usage error that names the field.
fn limit_arg(text: &str) -> Result<LimitArg, String> {
    parse_limit(text).map(LimitArg).map_err(|e| match e {
        Error::InvalidInput { field, rule } => format!("{field} {rule}"),
        other => other.to_string(),
    })
}

/// `at most 5 jobs run at once`, `no concurrency limit`.
pub(crate) fn limit_words(limit: Option<u32>) -> String {
    match limit {
        Some(1) => "at most 1 job runs at once".to_owned(),
        Some(n) => format!("at most {n} jobs run at once"),
        None => "no concurrency limit".to_owned(),
    }
}

/// `queue emails: at most 5 jobs run at once`, `queue emails: no concurrency limit`.
pub(crate) fn limit_sentence(queue: &str, limit: Option<u32>) -> String {
    format!("queue {queue}: {}", limit_words(limit))
}

/// The controls of `name` as stored, read back after a change (`None` when that read fails:
/// the change itself was made).
async fn controls_of(queue: &dyn Queue, name: &str) -> Option<QueueStats> {
    let stats = queue.stats(Some(name)).await.ok()?;
    stats.into_iter().find(|s| s.queue == name)
}

pub(crate) async fn pause(args: QueueArgs) -> Result<(), CliError> {
    validate::queue_name(&args.queue)?;
    let queue = args.target.connect().await?;
    queue.pause(&args.queue).await?;
    println!("paused queue {}", args.queue);
    Ok(())
}

pub(crate) async fn resume(args: QueueArgs) -> Result<(), CliError> {
    validate::queue_name(&args.queue)?;
    let queue = args.target.connect().await?;
    queue.resume(&args.queue).await?;
    let limit = controls_of(queue.as_ref(), &args.queue)
        .await
        .and_then(|s| s.concurrency_limit);
    match limit {
        Some(n) => println!(
            "resumed queue {}; at most {n} of its jobs run at once",
            args.queue
        ),
        None => println!("resumed queue {}", args.queue),
    }
    Ok(())
}

pub(crate) async fn limit(args: LimitArgs) -> Result<(), CliError> {
    validate::queue_name(&args.queue)?;
    let LimitArg(limit) = args.limit;
    let queue = args.target.connect().await?;
    queue.set_concurrency_limit(&args.queue, limit).await?;
    let paused = controls_of(queue.as_ref(), &args.queue)
        .await
        .is_some_and(|s| s.paused);
    let sentence = limit_sentence(&args.queue, limit);
    if paused {
        println!(
            "{sentence} (paused: nothing runs until `queue resume {}`)",
            args.queue
        );
    } else {
        println!("{sentence}");
    }
    Ok(())
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
    if let Some(kind) = &args.kind {
        job = job.kind(kind.as_str());
    }
    if let Some(meta) = &args.meta {
        let value: serde_json::Value = serde_json::from_str(meta)
            .map_err(|e| Error::invalid("meta", format!("must be a JSON object ({e})")))?;
        job = job.meta(&value)?;
    }
    if let Some(timeout) = &args.timeout {
        job = job.timeout(duration::parse("timeout", timeout)?);
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

/// `paused` or `running`: whether the queue gives out jobs.
pub(crate) fn queue_state(s: &QueueStats) -> &'static str {
    if s.paused {
        "paused"
    } else {
        "running"
    }
}

/// The `stats` table, also printed by the demo: the counts, then whether the queue is paused
/// (`state`) and its concurrency limit (`limit`, `-` for none).
pub(crate) fn stats_table(stats: &[QueueStats]) -> String {
    let rows: Vec<Vec<String>> = stats
        .iter()
        .map(|s| {
            std::iter::once(s.queue.clone())
                .chain(counts(s).iter().map(u64::to_string))
                .chain([
                    queue_state(s).to_owned(),
                    s.concurrency_limit
                        .map_or_else(|| "-".to_owned(), |n| n.to_string()),
                ])
                .collect()
        })
        .collect();
    let header: Vec<&str> = std::iter::once("queue")
        .chain(COUNT_COLUMNS)
        .chain(["state", "limit"])
        .collect();
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
        "paused": s.paused,
        "concurrency_limit": s.concurrency_limit,
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
        kind: args.kind.clone(),
    };
    req.validate()?;
    let queue = args.target.connect().await?;
    let jobs = queue.list(req).await?;
    if args.json {
        let rows: Vec<_> = jobs.iter().map(|j| job_json(j, false)).collect();
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
                    "kind",
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
        job.kind
            .as_deref()
            .map_or_else(|| "-".to_owned(), |k| table::clip(k, 24)),
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

/// `job` as JSON: every field for `get --json` (`detail`), and without the history and output,
/// which `list` does not read, for `list --json`.
fn job_json(job: &Job, detail: bool) -> serde_json::Value {
    let raw = |v: &Option<Box<serde_json::value::RawValue>>| {
        v.as_deref()
            .and_then(|r| serde_json::from_str::<serde_json::Value>(r.get()).ok())
    };
    let mut value = serde_json::json!({
        "id": job.id,
        "queue": job.queue,
        "kind": job.kind,
        "state": job.state,
        "payload": job.payload_value(),
        "meta": raw(&job.meta),
        "priority": job.priority,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "run_at": job.run_at,
        "lease_expires_at": job.lease_expires_at,
        "worker": job.worker,
        "last_error": job.last_error,
        "dedup_key": job.dedup_key,
        "timeout_ms": job.timeout.map(|t| t.as_millis() as u64),
        "snoozes": job.snoozes,
        "created_at": job.created_at,
        "updated_at": job.updated_at,
        "finished_at": job.finished_at,
    });
    if detail {
        value["errors"] = serde_json::json!(job.errors);
        value["output"] = raw(&job.output).into();
    }
    value
}

/// `job` as lines of `name: value`, then its payload, metadata, output and error history.
fn job_text(job: &Job) -> String {
    use std::fmt::Write as _;
    let time = |t: &chrono::DateTime<chrono::Utc>| t.format(TIME_FORMAT).to_string();
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    let mut out = String::new();
    let fields = [
        ("id", job.id.to_string()),
        ("queue", job.queue.clone()),
        ("kind", or_dash(job.kind.clone())),
        ("state", job.state.to_string()),
        ("attempts", format!("{}/{}", job.attempts, job.max_attempts)),
        ("snoozes", job.snoozes.to_string()),
        ("priority", job.priority.to_string()),
        ("run_at", time(&job.run_at)),
        ("timeout", or_dash(job.timeout.map(|t| format!("{t:?}")))),
        ("dedup_key", or_dash(job.dedup_key.clone())),
        ("worker", or_dash(job.worker.clone())),
        (
            "lease_expires_at",
            or_dash(job.lease_expires_at.as_ref().map(time)),
        ),
        ("created_at", time(&job.created_at)),
        ("updated_at", time(&job.updated_at)),
        ("finished_at", or_dash(job.finished_at.as_ref().map(time))),
        ("last_error", or_dash(job.last_error.clone())),
    ];
    for (name, value) in fields {
        let _ = writeln!(out, "{name:<17}{value}");
    }
    let _ = writeln!(out, "payload:\n{}", pretty(&job.payload_value()));
    if job.meta.is_some() {
        let _ = writeln!(out, "meta:\n{}", pretty(&job.meta_value()));
    }
    if let Some(output) = job.output.as_deref() {
        let value = serde_json::from_str(output.get()).unwrap_or(serde_json::Value::Null);
        let _ = writeln!(out, "output:\n{}", pretty(&value));
    }
    if !job.errors.is_empty() {
        let _ = writeln!(
            out,
            "errors (oldest first, the newest {} kept):",
            queue_core::ERRORS_KEPT
        );
        let rows: Vec<Vec<String>> = job
            .errors
            .iter()
            .map(|e| {
                vec![
                    e.attempt.to_string(),
                    time(&e.at),
                    or_dash(e.worker.clone()),
                    table::clip(&e.error, 72),
                ]
            })
            .collect();
        out.push_str(&table::render(&["attempt", "at", "worker", "error"], &rows));
    }
    out
}

pub(crate) async fn get(args: GetArgs) -> Result<(), CliError> {
    let id: JobId = args.id.trim().parse()?;
    let queue = args.target.connect().await?;
    let Some(job) = queue.get(id).await? else {
        return Err(Error::NotFound { job: id }.into());
    };
    if args.json {
        println!("{}", job_json(&job, true));
    } else {
        print!("{}", job_text(&job));
    }
    Ok(())
}

pub(crate) async fn reschedule(args: RescheduleArgs) -> Result<(), CliError> {
    let id: JobId = args.id.trim().parse()?;
    let mut change = Reschedule::new();
    if let Some(delay) = &args.delay {
        change = change.delay(duration::parse("delay", delay)?);
    }
    if let Some(at) = &args.at {
        let at = chrono::DateTime::parse_from_rfc3339(at.trim()).map_err(|_| {
            Error::invalid(
                "at",
                "must be a time such as 2026-12-01T08:00:00Z (RFC 3339)",
            )
        })?;
        change = change.run_at(at.with_timezone(&chrono::Utc));
    }
    if let Some(p) = args.priority {
        change = change.priority(p);
    }
    change.validate()?;
    let queue = args.target.connect().await?;
    queue.reschedule(id, change).await?;
    // The change is stored; reading it back only adds detail to the message.
    match queue.get(id).await.ok().flatten() {
        Some(j) => println!(
            "rescheduled {id}: due {} (UTC), priority {}",
            j.run_at.format(TIME_FORMAT),
            j.priority
        ),
        None => println!("rescheduled {id}"),
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_numbers_or_none() {
        assert_eq!(parse_limit("5").unwrap(), Some(5));
        assert_eq!(parse_limit(" 12 ").unwrap(), Some(12));
        assert_eq!(parse_limit("none").unwrap(), None);
        assert_eq!(parse_limit("NONE").unwrap(), None);
        // 0 and too large numbers are the library's to refuse.
        assert_eq!(parse_limit("0").unwrap(), Some(0));
        assert_eq!(parse_limit("2000000").unwrap(), Some(2_000_000));
        for bad in ["", "abc", "-1", "+3", "1.5", "5 jobs", "99999999999"] {
            match parse_limit(bad) {
                Err(Error::InvalidInput { field, .. }) => {
                    assert_eq!(field, "concurrency_limit", "{bad:?}")
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert_eq!(
            limit_arg("abc").unwrap_err(),
            "concurrency_limit must be a whole number of jobs from 1 to 1000000, or none to \
             remove the limit"
        );
    }

    #[test]
    fn the_stats_table_shows_the_controls() {
        let stats = [
            QueueStats {
                queue: "emails".into(),
                available: 3,
                paused: true,
                ..QueueStats::default()
            },
            QueueStats {
                queue: "reports".into(),
                concurrency_limit: Some(5),
                ..QueueStats::default()
            },
        ];
        let table = stats_table(&stats);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].ends_with("cancelled  state    limit"), "{table}");
        assert!(lines[1].ends_with("paused   -"), "{table}");
        assert!(lines[2].ends_with("running  5"), "{table}");
        let json = stats_json(&stats[1]);
        assert_eq!(json["paused"], false);
        assert_eq!(json["concurrency_limit"], 5);
        assert!(stats_json(&stats[0])["concurrency_limit"].is_null());
        assert_eq!(
            limit_sentence("q", Some(1)),
            "queue q: at most 1 job runs at once"
        );
    }
}
