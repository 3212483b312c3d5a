//! `queue-chaos`: runs fault scenarios against the queue on every backend and claim strategy,
//! with worker processes of its own, and checks after each that no job was lost, stuck or run
//! twice with effect. Prints one line per scenario and, with `--json`, a report. See
//! RELIABILITY.md at the repository root for what each scenario does and what it measured.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod child;
mod db;
mod operator;
mod procs;
mod runlog;
mod scenario;
mod server;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use futures::StreamExt;
use serde::Serialize;
use sqlx::Connection;

use crate::db::Kind;
use crate::scenario::{Env, Row, Scenario, Sizes};
use crate::server::Binaries;

#[derive(Parser)]
#[command(
    name = "queue-chaos",
    about = "Fault scenarios for the dbqueue job queue"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the scenarios.
    Run(RunArgs),
    /// A worker process (started by `run`).
    #[command(hide = true)]
    Worker(child::WorkerArgs),
    /// A holder process for the pause scenario (started by `run`).
    #[command(hide = true)]
    Holder(child::HolderArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Backends to run on; a server backend without a URL is skipped with a line saying so,
    /// unless QUEUE_TEST_REQUIRE names it.
    #[arg(long, value_delimiter = ',', default_value = "sqlite,postgres,mysql")]
    backend: Vec<Kind>,
    /// Scenarios to run (default: all).
    #[arg(long, value_delimiter = ',')]
    scenario: Vec<Scenario>,
    /// Claim strategies to run (default: every strategy each backend has).
    #[arg(long, value_delimiter = ',')]
    strategy: Vec<String>,
    /// The short version CI runs: few jobs, two faults per scenario.
    #[arg(long)]
    short: bool,
    /// Jobs per scenario (default 240 with --short, else 5000).
    #[arg(long)]
    jobs: Option<u32>,
    /// Worker processes (default 3 with --short, else 6).
    #[arg(long)]
    procs: Option<usize>,
    /// Handler slots per worker process (default 4 with --short, else 8).
    #[arg(long)]
    slots: Option<usize>,
    /// Faults per fault scenario: restarts, disconnect rounds, lock holds (default 2 with
    /// --short, else 6).
    #[arg(long)]
    faults: Option<u32>,
    /// The PostgreSQL database to run on.
    #[arg(long, env = "QUEUE_TEST_POSTGRES_URL", hide_env_values = true)]
    postgres_url: Option<String>,
    /// The MySQL or MariaDB database to run on.
    #[arg(long, env = "QUEUE_TEST_MYSQL_URL", hide_env_values = true)]
    mysql_url: Option<String>,
    /// The directory of PostgreSQL's initdb and pg_ctl, for the private instances of the
    /// restart and disconnect scenarios (default: pg_config --bindir, else the newest
    /// /usr/lib/postgresql/*/bin).
    #[arg(long, env = "QUEUE_CHAOS_PG_BIN")]
    pg_bin: Option<PathBuf>,
    /// The directory of mariadbd and mariadb-install-db (default: /usr/sbin, /usr/bin).
    #[arg(long, env = "QUEUE_CHAOS_MARIADB_BIN")]
    mariadb_bin: Option<PathBuf>,
    /// Writes the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Keeps each run's tables, SQLite files and logs (their directory is printed).
    #[arg(long)]
    keep: bool,
    /// How many backend and strategy pairs run their scenarios at the same time (default 1:
    /// one after the other, for measurements free of each other's load).
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Worker(args) => child::worker(args).await.map(|()| true),
            Command::Holder(args) => child::holder(args).await.map(|()| true),
            Command::Run(args) => run(args).await,
        }
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The machine a run happened on.
#[derive(Serialize)]
struct Machine {
    cpu: String,
    cores: usize,
    memory_gib: f64,
    kernel: String,
    load_before: String,
    load_after: String,
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let memory_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| (kb / 1024.0 / 1024.0 * 10.0).round() / 10.0);
    Machine {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_gib,
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_default(),
        load_before: load_average(),
        load_after: String::new(),
    }
}

#[derive(Serialize)]
struct Report {
    command: String,
    machine: Machine,
    rows: Vec<Row>,
}

fn required(kind: Kind) -> bool {
    std::env::var("QUEUE_TEST_REQUIRE")
        .map(|v| {
            v.split(',')
                .any(|b| b.trim().eq_ignore_ascii_case(kind.as_str()))
        })
        .unwrap_or(false)
}

/// The server's version, e.g. `PostgreSQL 15.14` or `MariaDB 10.11.19`.
async fn server_version(kind: Kind, url: &str) -> anyhow::Result<String> {
    let v: String = match kind {
        Kind::Postgres => {
            let mut c = sqlx::PgConnection::connect(url).await?;
            sqlx::query_scalar("SELECT version()")
                .fetch_one(&mut c)
                .await?
        }
        Kind::Mysql => {
            let mut c = sqlx::MySqlConnection::connect(url).await?;
            sqlx::query_scalar("SELECT version()")
                .fetch_one(&mut c)
                .await?
        }
        Kind::Sqlite => return Ok("SQLite (bundled)".into()),
    };
    Ok(scenario::short_version(&v))
}

async fn run(args: RunArgs) -> anyhow::Result<bool> {
    let mut sizes = if args.short {
        Sizes::short()
    } else {
        Sizes::full()
    };
    if let Some(n) = args.jobs {
        sizes.jobs = n;
    }
    if let Some(n) = args.procs {
        sizes.procs = n.max(1);
    }
    if let Some(n) = args.slots {
        sizes.slots = n.max(1);
    }
    if let Some(n) = args.faults {
        sizes.faults = n;
    }
    let scenarios = if args.scenario.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        args.scenario.clone()
    };
    let strategies = args
        .strategy
        .iter()
        .map(|s| db::parse_strategy(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bins = Binaries {
        postgres: args.pg_bin.clone(),
        mariadb: args.mariadb_bin.clone(),
    };
    let work = tempfile::Builder::new()
        .prefix("queue-chaos-run-")
        .tempdir()?;
    let mut report = Report {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine: machine(),
        rows: Vec::new(),
    };
    let m = &report.machine;
    println!(
        "queue-chaos on {} ({} cores, {} GiB, Linux {}), load average {}",
        m.cpu, m.cores, m.memory_gib, m.kernel, m.load_before
    );
    let mut ok = true;
    let mut streams = Vec::new();
    for kind in args.backend.iter().copied() {
        let url = match kind {
            Kind::Sqlite => Some(String::new()),
            Kind::Postgres => args.postgres_url.clone(),
            Kind::Mysql => args.mysql_url.clone(),
        }
        .filter(|u| kind == Kind::Sqlite || !u.trim().is_empty());
        let Some(url) = url else {
            let var = match kind {
                Kind::Postgres => "QUEUE_TEST_POSTGRES_URL",
                _ => "QUEUE_TEST_MYSQL_URL",
            };
            if required(kind) {
                println!(
                    "FAIL    {}: required by QUEUE_TEST_REQUIRE but {var} is not set",
                    kind.as_str()
                );
                ok = false;
            } else {
                println!(
                    "SKIPPED {}: set {var} (or --{}-url) to run it",
                    kind.as_str(),
                    kind.as_str()
                );
            }
            continue;
        };
        let server = server_version(kind, &url).await.with_context(|| {
            format!(
                "{} at {}",
                kind.as_str(),
                dbqueue::validate::redact_url(&url)
            )
        })?;
        let env = Env {
            kind,
            url,
            server,
            work: work.path().to_owned(),
            sizes: sizes.clone(),
            bins: bins.clone(),
            keep: args.keep,
            private: Default::default(),
        };
        for strategy in kind.strategies() {
            if strategies.is_empty() || strategies.contains(strategy) {
                streams.push((env.clone(), *strategy));
            }
        }
    }
    // Each stream (a backend and claim strategy) runs its scenarios in order; `--concurrency`
    // streams run at once. Scenarios that need the backend's private server take turns on it.
    let scenarios = &scenarios;
    let mut rows: Vec<Row> =
        futures::stream::iter(streams.into_iter().map(|(env, strategy)| async move {
            let mut rows = Vec::new();
            for scenario in scenarios {
                let row = scenario::run(*scenario, &env, strategy).await;
                println!("{}", row.line());
                rows.push(row);
            }
            rows
        }))
        .buffer_unordered(args.concurrency.max(1))
        .collect::<Vec<Vec<Row>>>()
        .await
        .into_iter()
        .flatten()
        .collect();
    rows.sort_by_key(|r| {
        (
            r.backend,
            r.strategy,
            scenarios.iter().position(|s| s.name() == r.scenario),
        )
    });
    ok &= !rows.iter().any(Row::failed);
    report.rows = rows;
    report.machine.load_after = load_average();
    let count = |status: &str| report.rows.iter().filter(|r| r.status == status).count();
    println!(
        "{} scenario runs: {} passed, {} failed, {} skipped; load average {} at the end",
        report.rows.len(),
        count("pass"),
        count("FAIL"),
        count("skipped"),
        report.machine.load_after
    );
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.keep || !ok {
        // Runs that failed left their tables (schema or table prefix `chaos_<scenario>_...`),
        // SQLite files, run logs and worker logs for inspection.
        println!("kept the run's files in {}", work.keep().display());
    }
    Ok(ok)
}
