//! The operator's subcommands: migrate, push, stats, list, get, retry, cancel, reschedule,
//! prune, and the queue controls pause, resume and limit.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use queue_core::validate::redact_url;
use queue_core::{
    validate, Error, Job, JobId, JobState, Limits, ListRequest, NewJob, PruneRequest, PushOutcome,
    Queue, QueueStats, RateLimit, Reschedule, Unique, MAX_CONCURRENCY_LIMIT,
};

use crate::duration;
use crate::failure::CliError;
use crate::payload;
use crate::table;
use crate::workflows;

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
    /// The job's concurrency key (a customer, a tenant): see `queue limit --key-limit` and
    /// `--fair`.
    #[arg(long, value_name = "KEY")]
    concurrency_key: Option<String>,
    /// The job's kind: which handler of a worker runs it.
    #[arg(long)]
    kind: Option<String>,
    /// Metadata stored with the job, as a JSON object.
    #[arg(long, allow_hyphen_values = true)]
    meta: Option<String>,
    /// The longest one attempt may run, e.g. 30s, 5m (a worker stops the handler past it).
    #[arg(long, allow_hyphen_values = true)]
    timeout: Option<String>,
    #[command(flatten)]
    unique: UniqueArgs,
    /// Then wait up to this many seconds for the job to finish, and print how it ended and its
    /// output; exits with status 1 when it ended dead or cancelled, or did not finish in time.
    #[arg(long, value_name = "SECS")]
    wait: Option<f64>,
}

/// The uniqueness rule of `push`: any of these options makes the job unique. Its key is the
/// job's kind, plus what the options add; a push that meets a job holding the same key stores
/// nothing (or, with `--unique-replace`, updates that job while it is pending).
#[derive(Debug, Args)]
#[command(next_help_heading = "Unique jobs")]
pub(crate) struct UniqueArgs {
    /// Unique by kind and the whole payload: a push that meets a job with the same kind and
    /// payload in one of the states of --unique-states stores nothing and prints that job's id.
    #[arg(long, conflicts_with = "unique_fields")]
    unique: bool,
    /// Unique by kind and these top-level fields of the payload (a JSON object), separated by
    /// commas, e.g. customer_id,day.
    #[arg(long, value_name = "FIELD,...", value_delimiter = ',')]
    unique_fields: Vec<String>,
    /// The queue is part of the unique key (without it, the same job in another queue is the
    /// same job).
    #[arg(long)]
    unique_by_queue: bool,
    /// The window of time the job is due in is part of the key, e.g. 1h or 1d: one such job per
    /// window (windows are counted from the Unix epoch, in UTC).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    unique_period: Option<String>,
    /// The states in which a job holds its key, separated by commas; must include pending and
    /// running [default: pending,running,completed].
    #[arg(long, value_name = "STATE,...", value_delimiter = ',')]
    unique_states: Vec<String>,
    /// On meeting a job that is still pending, give it this push's payload, priority and run
    /// time (a job that already started is left as it is).
    #[arg(long)]
    unique_replace: bool,
}

impl UniqueArgs {
    /// The rule the options ask for; `None` when no option was given.
    fn rule(&self) -> Result<Option<Unique>, Error> {
        let any = self.unique
            || !self.unique_fields.is_empty()
            || self.unique_by_queue
            || self.unique_period.is_some()
            || !self.unique_states.is_empty()
            || self.unique_replace;
        if !any {
            return Ok(None);
        }
        let mut rule = Unique::new();
        if self.unique {
            rule = rule.by_args();
        }
        if !self.unique_fields.is_empty() {
            rule = rule.by_fields(self.unique_fields.iter().map(|f| f.trim().to_owned()));
        }
        if self.unique_by_queue {
            rule = rule.by_queue();
        }
        if let Some(period) = &self.unique_period {
            rule = rule.by_period(duration::parse("unique.period", period)?);
        }
        if !self.unique_states.is_empty() {
            let states = self
                .unique_states
                .iter()
                .map(|s| {
                    s.trim().parse::<JobState>().map_err(|_| {
                        Error::invalid(
                            "unique.states",
                            format!(
                                "{:?} is not a state; use pending, running, completed, dead or \
                                 cancelled",
                                table::clip(s.trim(), 24)
                            ),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            rule = rule.states(states);
        }
        if self.unique_replace {
            rule = rule.replace();
        }
        Ok(Some(rule))
    }
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
    /// Only this state: waiting, pending, running, completed, dead or cancelled.
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
    /// Wait up to this many seconds for the job to finish first; exits with status 1 when it
    /// ended dead or cancelled, or did not finish in time.
    #[arg(long, value_name = "SECS")]
    wait: Option<f64>,
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
    /// (1 to 1000000); `none` removes the limit. Leave it out to change only the options.
    #[arg(
        value_name = "LIMIT",
        value_parser = limit_arg,
        allow_negative_numbers = true,
        required_unless_present_any = ["rate", "key_limit", "key_rate", "fair"]
    )]
    limit: Option<LimitArg>,
    /// At most N jobs with the same concurrency key run at once, across every worker and
    /// process (1 to 1000000); jobs of a key at its limit wait without holding back other
    /// keys' jobs. `none` removes it.
    #[arg(long, value_name = "N", value_parser = key_limit_arg, allow_negative_numbers = true)]
    key_limit: Option<LimitArg>,
    /// At most N jobs with the same concurrency key start in each window of PERIOD, across
    /// every worker and process, e.g. `10/1s` (fixed windows, counted per key); `none`
    /// removes it.
    #[arg(long, value_name = "N/PERIOD", value_parser = key_rate_arg)]
    key_rate: Option<RateArg>,
    /// `on`: claims take turns across the queue's concurrency keys, so one key's backlog does
    /// not delay the others; `off` stops it.
    #[arg(long, value_name = "on|off", value_parser = on_off)]
    fair: Option<bool>,
    /// At most N of the queue's jobs start in each window of PERIOD, across every worker and
    /// process, e.g. `100/1m` or `5/500ms` (windows are fixed: the multiples of PERIOD by the
    /// database's clock); `none` removes the rate limit.
    #[arg(long, value_name = "N/PERIOD", value_parser = rate_arg)]
    rate: Option<RateArg>,
}

/// The checked text of a rate limit: `N/PERIOD` or `none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RateArg(Option<RateLimit>);

/// Reads a rate limit as the command line takes it: `N/PERIOD` (`100/1m`, `5/500ms`), or
/// `none`. The rules on both numbers are the library's ([`RateLimit::new`]).
pub(crate) fn parse_rate(text: &str) -> Result<Option<RateLimit>, Error> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let Some((n, period)) = text.split_once('/') else {
        return Err(Error::invalid(
            "rate_limit",
            "must be N/PERIOD (starts per window, e.g. 100/1m or 5/500ms), or none",
        ));
    };
    let n = n.trim();
    let limit = match n.parse::<u32>() {
        Ok(limit) if n.bytes().all(|b| b.is_ascii_digit()) => limit,
        _ => {
            return Err(Error::invalid(
                "rate_limit.limit",
                format!(
                    "must be a whole number of jobs from 1 to {MAX_CONCURRENCY_LIMIT} (got {})",
                    crate::table::clip(n, 24)
                ),
            ))
        }
    };
    let period = crate::duration::parse("rate_limit.period", period)?;
    RateLimit::new(limit, period).map(Some)
}

/// The clap parser of `--rate`: bad text is a usage error that names the field.
fn rate_arg(text: &str) -> Result<RateArg, String> {
    parse_rate(text).map(RateArg).map_err(|e| match e {
        Error::InvalidInput { field, rule } => format!("{field} {rule}"),
        other => other.to_string(),
    })
}

/// `at most 100 jobs start per 1m`, `no rate limit`.
pub(crate) fn rate_words(rate: Option<RateLimit>) -> String {
    match rate {
        Some(r) => format!(
            "at most {} {} per {}",
            r.limit,
            if r.limit == 1 {
                "job starts"
            } else {
                "jobs start"
            },
            period_words(r.period)
        ),
        None => "no rate limit".to_owned(),
    }
}

/// A window's length as the command line takes it: `1m`, `500ms`, `90s`.
pub(crate) fn period_words(period: std::time::Duration) -> String {
    let ms = period.as_millis();
    match ms {
        ms if ms % 86_400_000 == 0 => format!("{}d", ms / 86_400_000),
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

/// The checked text of a concurrency limit: a number (which the library may still refuse, as
/// it refuses 0) or `none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LimitArg(Option<u32>);

/// `--key-limit`: as a concurrency limit, with the key limit's name in its errors.
fn key_limit_arg(text: &str) -> Result<LimitArg, String> {
    parse_limit(text).map(LimitArg).map_err(|e| match e {
        Error::InvalidInput { rule, .. } => format!("key_limit {rule}"),
        other => other.to_string(),
    })
}

/// `--key-rate`: as a rate limit, with the key rate limit's name in its errors.
fn key_rate_arg(text: &str) -> Result<RateArg, String> {
    parse_rate(text).map(RateArg).map_err(|e| match e {
        Error::InvalidInput { field, rule } => format!("key_{field} {rule}"),
        other => other.to_string(),
    })
}

/// `on` or `off`.
pub(crate) fn on_off(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        other => Err(format!("must be `on` or `off` (got `{other}`)")),
    }
}

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
    let queue = args.target.connect().await?;
    if let Some(LimitArg(limit)) = args.limit {
        queue.set_concurrency_limit(&args.queue, limit).await?;
    }
    if let Some(RateArg(rate)) = args.rate {
        queue.set_rate_limit(&args.queue, rate).await?;
    }
    if let Some(LimitArg(n)) = args.key_limit {
        queue.set_key_limit(&args.queue, n).await?;
    }
    if let Some(RateArg(rate)) = args.key_rate {
        queue.set_key_rate_limit(&args.queue, rate).await?;
    }
    if let Some(on) = args.fair {
        queue.set_fair_shares(&args.queue, on).await?;
    }
    let stored = controls_of(queue.as_ref(), &args.queue).await;
    let paused = stored.as_ref().is_some_and(|s| s.paused);
    let mut sentence = match args.limit {
        Some(LimitArg(limit)) => limit_sentence(&args.queue, limit),
        None => format!("queue {}", args.queue),
    };
    let mut options = Vec::new();
    if let Some(RateArg(rate)) = args.rate {
        options.push(rate_words(rate));
    }
    if let Some(LimitArg(n)) = args.key_limit {
        options.push(key_limit_words(n));
    }
    if let Some(RateArg(rate)) = args.key_rate {
        options.push(key_rate_words(rate));
    }
    if let Some(on) = args.fair {
        options.push(fair_words(on).to_owned());
    }
    if !options.is_empty() {
        let sep = if args.limit.is_some() { "," } else { ":" };
        sentence = format!("{sentence}{sep} {}", options.join(", "));
    }
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
    if let Some(key) = &args.concurrency_key {
        job = job.concurrency_key(key.as_str());
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
    let unique = args.unique.rule()?;
    if let Some(rule) = &unique {
        job = job.unique(rule.clone());
    }
    job.validate(&limits)?;
    let wait = args.wait.map(wait_secs).transpose()?;
    let queue = args.target.connect().await?;
    if unique.is_none() {
        let id = queue.push(job).await?;
        println!("{id}");
        if let Some(timeout) = wait {
            let job = queue.wait(id, timeout).await?;
            print!("{}", job_text(&job));
            return ended(&job);
        }
        return Ok(());
    }
    // The id goes to standard output whatever happened, so `id=$(queue push ...)` names the
    // job that stands for the push; what happened goes to standard error.
    let outcome = queue.push_outcome(job).await?;
    println!("{}", outcome.id());
    let state = match outcome {
        PushOutcome::Existing(id) => queue.get(id).await.ok().flatten().map(|j| j.state),
        PushOutcome::Inserted(_) | PushOutcome::Replaced(_) => None,
    };
    eprintln!("{}", outcome_words(&outcome, state));
    if let Some(timeout) = wait {
        let job = queue.wait(outcome.id(), timeout).await?;
        print!("{}", job_text(&job));
        return ended(&job);
    }
    Ok(())
}

/// What a unique push did, in one line that starts with `inserted`, `existing` or `replaced`;
/// `state` is the state of the job it met, when it was read.
fn outcome_words(outcome: &PushOutcome, state: Option<JobState>) -> String {
    let state = state.map(|s| format!(" ({s})")).unwrap_or_default();
    match outcome {
        PushOutcome::Inserted(id) => format!("inserted {id}: no job held its unique key"),
        PushOutcome::Existing(id) => {
            format!("existing {id}{state}: it holds the unique key; nothing was stored")
        }
        PushOutcome::Replaced(id) => format!(
            "replaced {id}: it was pending and now has this push's payload, priority and run \
             time"
        ),
    }
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
pub(crate) const COUNT_COLUMNS: [&str; 7] = [
    "waiting",
    "available",
    "scheduled",
    "running",
    "completed",
    "dead",
    "cancelled",
];

/// The counts of `s`, in the order of [`COUNT_COLUMNS`].
pub(crate) fn counts(s: &QueueStats) -> [u64; 7] {
    [
        s.waiting,
        s.available,
        s.scheduled,
        s.running,
        s.completed,
        s.dead,
        s.cancelled,
    ]
}

/// Whether each count of `s` stopped at the stats cap (in the order of [`COUNT_COLUMNS`]):
/// there are at least that many, perhaps more.
pub(crate) fn capped(s: &QueueStats) -> [bool; 7] {
    [
        false,
        false,
        false,
        false,
        s.at_least(JobState::Completed),
        s.at_least(JobState::Dead),
        s.at_least(JobState::Cancelled),
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

/// The `stats` table, also printed by the demo: the counts (`100000+` for one that stopped at
/// the stats cap, with a line under the table that says so), then whether the queue is paused
/// (`state`), its concurrency limit (`limit`, `-` for none), its rate limit (`rate`, as
/// `N/PERIOD`) and its key controls (`keys`); then a line per keyed queue with running jobs
/// naming its hot keys.
pub(crate) fn stats_table(stats: &[QueueStats]) -> String {
    let rows: Vec<Vec<String>> = stats
        .iter()
        .map(|s| {
            std::iter::once(s.queue.clone())
                .chain(counts(s).iter().zip(capped(s)).map(|(n, capped)| {
                    if capped {
                        format!("{n}+")
                    } else {
                        n.to_string()
                    }
                }))
                .chain([
                    queue_state(s).to_owned(),
                    s.concurrency_limit
                        .map_or_else(|| "-".to_owned(), |n| n.to_string()),
                    s.rate_limit.map_or_else(
                        || "-".to_owned(),
                        |r| format!("{}/{}", r.limit, period_words(r.period)),
                    ),
                    key_words(s),
                ])
                .collect()
        })
        .collect();
    let header: Vec<&str> = std::iter::once("queue")
        .chain(COUNT_COLUMNS)
        .chain(["state", "limit", "rate", "keys"])
        .collect();
    let mut out = table::render(&header, &rows);
    for s in stats.iter().filter(|s| !s.hot_keys.is_empty()) {
        let keys: Vec<String> = s
            .hot_keys
            .iter()
            .map(|h| format!("{} {} running, {} waiting", h.key, h.running, h.waiting))
            .collect();
        out.push_str(&format!("hot keys of {}: {}\n", s.queue, keys.join("; ")));
    }
    let cap = stats
        .iter()
        .filter(|s| capped(s).contains(&true))
        .find_map(|s| s.count_cap);
    if let Some(cap) = cap {
        out.push_str(&format!(
            "+: at least this many; finished jobs are counted up to {cap} per queue and state\n"
        ));
    }
    out
}

/// A key limit in words, as the CLI says it: `at most 3 jobs per concurrency key run at once`,
/// `no key limit`.
pub(crate) fn key_limit_words(limit: Option<u32>) -> String {
    match limit {
        Some(1) => "at most 1 job per concurrency key runs at once".to_owned(),
        Some(n) => format!("at most {n} jobs per concurrency key run at once"),
        None => "no key limit".to_owned(),
    }
}

/// Fair shares in words, as the CLI says them.
pub(crate) fn fair_words(on: bool) -> &'static str {
    if on {
        "claims take turns across concurrency keys"
    } else {
        "fair shares off"
    }
}

/// A key rate limit in words: `at most 10 jobs per concurrency key start per 1s`, `no key rate
/// limit`.
pub(crate) fn key_rate_words(rate: Option<RateLimit>) -> String {
    match rate {
        Some(r) => format!(
            "at most {} {} per concurrency key start per {}",
            r.limit,
            if r.limit == 1 { "job" } else { "jobs" },
            period_words(r.period)
        ),
        None => "no key rate limit".to_owned(),
    }
}

/// The `keys` cell of `stats`: the key limit (`3/key`), the key rate limit (`10/1s/key`),
/// `fair` for fair shares without either, `-` for none.
pub(crate) fn key_words(s: &QueueStats) -> String {
    let mut parts = Vec::new();
    if let Some(n) = s.key_limit {
        parts.push(format!("{n}/key"));
    }
    if let Some(r) = s.key_rate_limit {
        parts.push(format!("{}/{}/key", r.limit, period_words(r.period)));
    }
    if parts.is_empty() && s.fair_shares {
        parts.push("fair".to_owned());
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(",")
    }
}

fn stats_json(s: &QueueStats) -> serde_json::Value {
    serde_json::json!({
        "queue": s.queue,
        "waiting": s.waiting,
        "available": s.available,
        "scheduled": s.scheduled,
        "running": s.running,
        "oldest_due": s.oldest_due.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        "completed": s.completed,
        "dead": s.dead,
        "cancelled": s.cancelled,
        "paused": s.paused,
        "concurrency_limit": s.concurrency_limit,
        "rate_limit": s.rate_limit.map(|r| serde_json::json!({
            "limit": r.limit,
            "period_ms": u64::try_from(r.period.as_millis()).unwrap_or(u64::MAX),
        })),
        "key_limit": s.key_limit,
        "fair_shares": s.fair_shares,
        "key_rate_limit": s.key_rate_limit.map(|r| serde_json::json!({
            "limit": r.limit,
            "period_ms": u64::try_from(r.period.as_millis()).unwrap_or(u64::MAX),
        })),
        "hot_keys": s.hot_keys.iter().map(|h| serde_json::json!({
            "key": h.key,
            "running": h.running,
            "waiting": h.waiting,
        })).collect::<Vec<_>>(),
        // Finished jobs are counted up to the cap; the counts named here stopped at it, so
        // there are at least that many.
        "count_cap": s.count_cap,
        "at_least": COUNT_COLUMNS
            .iter()
            .zip(capped(s))
            .filter_map(|(name, capped)| capped.then_some(*name))
            .collect::<Vec<_>>(),
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

pub(crate) const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.3f";

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

/// `job` as JSON: every field for `get --json` (`detail`), and without the history, output,
/// step and dependencies, which `list` does not read, for `list --json`.
pub(crate) fn job_json(job: &Job, detail: bool) -> serde_json::Value {
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
        "workflow": job.workflow,
        "blocked_by": job.blocked_by,
    });
    if detail {
        value["errors"] = serde_json::json!(job.errors);
        value["output"] = raw(&job.output).into();
        value["step"] = job.step.clone().into();
        value["depends_on"] = job
            .depends_on
            .iter()
            .map(|d| {
                serde_json::json!({
                    "id": d.id,
                    "step": d.step,
                    "policy": d.policy,
                    "state": d.state,
                    "output": raw(&d.output),
                })
            })
            .collect();
    }
    value
}

/// The most characters of an error that `get`'s history table shows.
const ERROR_SHOWN: usize = 72;

/// `job` as lines of `name: value`, then its payload, metadata, output and error history.
fn job_text(job: &Job) -> String {
    use std::fmt::Write as _;
    let time = |t: &chrono::DateTime<chrono::Utc>| t.format(TIME_FORMAT).to_string();
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    let mut out = String::new();
    let mut fields = vec![
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
    // A step of a workflow says which, after its state; a job that a failed dependency
    // cancelled says which dependency and how it ended.
    if let Some(workflow) = job.workflow {
        let step = ("step", or_dash(job.step.clone()));
        fields.splice(4..4, [("workflow", workflow.to_string()), step]);
    }
    if let Some(blocked_by) = job.blocked_by {
        fields.push(("blocked_by", workflows::blocked_words(job, blocked_by)));
    }
    for (name, value) in fields {
        let _ = writeln!(out, "{name:<17}{value}");
    }
    if !job.depends_on.is_empty() {
        let _ = writeln!(out, "depends on:");
        let rows: Vec<Vec<String>> = job
            .depends_on
            .iter()
            .map(|d| {
                vec![
                    table::clip(&d.step, workflows::STEP_SHOWN),
                    d.id.to_string(),
                    workflows::policy_words(d.policy).to_owned(),
                    d.state
                        .map_or_else(|| "deleted".to_owned(), |s| s.to_string()),
                ]
            })
            .collect();
        out.push_str(&table::render(&["step", "id", "needs", "state"], &rows));
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
                    table::clip(&e.error, ERROR_SHOWN),
                ]
            })
            .collect();
        out.push_str(&table::render(&["attempt", "at", "worker", "error"], &rows));
        if job
            .errors
            .iter()
            .any(|e| e.error.chars().count() > ERROR_SHOWN)
        {
            let _ = writeln!(
                out,
                "(errors longer than {ERROR_SHOWN} characters are cut: `queue get {} --json` \
                 prints them whole)",
                job.id
            );
        }
    }
    out
}

pub(crate) async fn get(args: GetArgs) -> Result<(), CliError> {
    let id: JobId = args.id.trim().parse()?;
    let wait = args.wait.map(wait_secs).transpose()?;
    let queue = args.target.connect().await?;
    let job = match wait {
        Some(timeout) => queue.wait(id, timeout).await?,
        None => match queue.get(id).await? {
            Some(job) => job,
            None => return Err(Error::NotFound { job: id }.into()),
        },
    };
    if args.json {
        println!("{}", job_json(&job, true));
    } else {
        print!("{}", job_text(&job));
    }
    if wait.is_some() {
        return ended(&job);
    }
    Ok(())
}

/// `--wait SECS` as a timeout.
fn wait_secs(secs: f64) -> Result<std::time::Duration, CliError> {
    std::time::Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| CliError::usage("invalid wait: must be a number of seconds above zero"))
}

/// How a waited-for job ended, as an exit status: 0 when it completed.
fn ended(job: &Job) -> Result<(), CliError> {
    match job.state {
        JobState::Completed => Ok(()),
        state => Err(CliError::other(format!("job {} ended {state}", job.id))),
    }
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
        assert!(
            lines[0].ends_with("cancelled  state    limit  rate  keys"),
            "{table}"
        );
        assert!(lines[1].ends_with("paused   -      -     -"), "{table}");
        assert!(lines[2].ends_with("running  5      -     -"), "{table}");
        let json = stats_json(&stats[1]);
        assert_eq!(json["paused"], false);
        assert_eq!(json["concurrency_limit"], 5);
        assert!(stats_json(&stats[0])["concurrency_limit"].is_null());
        assert_eq!(
            limit_sentence("q", Some(1)),
            "queue q: at most 1 job runs at once"
        );
    }

    #[test]
    fn capped_counts_read_as_at_least() {
        let stats = [
            QueueStats {
                queue: "big".into(),
                available: 4,
                completed: 100_000,
                dead: 99_999,
                cancelled: 100_000,
                count_cap: Some(100_000),
                ..QueueStats::default()
            },
            QueueStats {
                queue: "small".into(),
                completed: 7,
                count_cap: Some(100_000),
                ..QueueStats::default()
            },
        ];
        let table = stats_table(&stats);
        let lines: Vec<&str> = table.lines().collect();
        let big: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            big,
            ["big", "0", "4", "0", "0", "100000+", "99999", "100000+", "running", "-", "-", "-"],
            "{table}"
        );
        // Numbers stay right-aligned beside a capped one.
        assert!(lines[2].contains("        7  "), "{table}");
        assert_eq!(
            lines[3],
            "+: at least this many; finished jobs are counted up to 100000 per queue and state"
        );
        assert_eq!(stats_table(&stats[1..]).lines().count(), 2, "no note");
        let json = stats_json(&stats[0]);
        assert_eq!(json["completed"], 100_000);
        assert_eq!(json["count_cap"], 100_000);
        assert_eq!(
            json["at_least"],
            serde_json::json!(["completed", "cancelled"])
        );
        assert_eq!(stats_json(&stats[1])["at_least"], serde_json::json!([]));
        let uncapped = QueueStats {
            completed: 5,
            ..QueueStats::default()
        };
        assert!(stats_json(&uncapped)["count_cap"].is_null());
    }

    fn unique(f: impl FnOnce(&mut UniqueArgs)) -> Result<Option<Unique>, Error> {
        let mut args = UniqueArgs {
            unique: false,
            unique_fields: Vec::new(),
            unique_by_queue: false,
            unique_period: None,
            unique_states: Vec::new(),
            unique_replace: false,
        };
        f(&mut args);
        args.rule()
    }

    #[test]
    fn unique_options_map_onto_the_rule() {
        assert_eq!(unique(|_| {}).unwrap(), None);
        assert_eq!(
            unique(|a| a.unique = true).unwrap(),
            Some(Unique::new().by_args())
        );
        assert_eq!(
            unique(|a| {
                a.unique_fields = vec!["customer".into(), " day ".into()];
                a.unique_by_queue = true;
                a.unique_period = Some("1d".into());
                a.unique_states = vec!["pending".into(), "running".into(), "dead".into()];
                a.unique_replace = true;
            })
            .unwrap(),
            Some(
                Unique::new()
                    .by_fields(["customer", "day"])
                    .by_queue()
                    .by_period(std::time::Duration::from_secs(86_400))
                    .states([JobState::Pending, JobState::Running, JobState::Dead])
                    .replace()
            )
        );
        // Any option alone makes the job unique, keyed by its kind and what the option adds.
        assert_eq!(
            unique(|a| a.unique_by_queue = true).unwrap(),
            Some(Unique::new().by_queue())
        );
        let field = |r: Result<Option<Unique>, Error>| match r {
            Err(Error::InvalidInput { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(unique(|a| a.unique_states = vec!["done".into()])),
            "unique.states"
        );
        assert_eq!(
            field(unique(|a| a.unique_period = Some("soon".into()))),
            "unique.period"
        );
    }

    #[test]
    fn unique_outcomes_say_what_happened() {
        let id: JobId = "0190f0e4-1c2b-7d3e-8f00-123456789abc".parse().unwrap();
        assert_eq!(
            outcome_words(&PushOutcome::Inserted(id), None),
            format!("inserted {id}: no job held its unique key")
        );
        assert_eq!(
            outcome_words(&PushOutcome::Existing(id), Some(JobState::Completed)),
            format!("existing {id} (completed): it holds the unique key; nothing was stored")
        );
        assert!(outcome_words(&PushOutcome::Replaced(id), None).starts_with("replaced "));
    }
}
