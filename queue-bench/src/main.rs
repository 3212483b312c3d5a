//! `queue-bench`: measures each backend of the job queue against the SQL a team would write by
//! hand instead, in the same process and the same run, and prints the numbers with the
//! machine, the server and its durability settings. See `BENCHMARKS.md` for the method.

mod backend;
mod machine;
#[cfg(feature = "mssql")]
mod mssql;
mod mysql;
mod pg;
mod procs;
mod report;
mod sqlite;
mod workload;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use crate::backend::{BackendKind, Server};
use crate::report::{Report, ServerReport};
use crate::workload::{Settings, Workload};

/// Benchmarks the job queue against hand-written SQL on SQLite, PostgreSQL, MySQL/MariaDB or
/// SQL Server.
#[derive(Parser, Debug)]
#[command(name = "queue-bench", version)]
struct Cli {
    /// Which database to measure.
    #[arg(long, value_enum, default_value_t = BackendKind::Sqlite)]
    backend: BackendKind,
    /// Database URL. Defaults: a temporary SQLite file;
    /// postgres://postgres@127.0.0.1:5432/test; mysql://root@127.0.0.1:3306/test; for mssql,
    /// QUEUE_TEST_MSSQL_URL (a mssql:// URL).
    #[arg(long)]
    url: Option<String>,
    /// Which workload to run (`drain` runs both the prefetch-`--batch` and the prefetch-1 drain).
    #[arg(long, value_enum, default_value_t = WorkloadArg::All)]
    workload: WorkloadArg,
    /// Jobs per workload.
    #[arg(long, default_value_t = 20_000)]
    jobs: u64,
    /// Worker slots (handlers at once) and, for the baselines, concurrent claim loops.
    #[arg(long, default_value_t = 16)]
    workers: usize,
    /// Pop batch: the worker's prefetch and the batched baseline's claim size.
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Size of each job's JSON payload in bytes (approximately).
    #[arg(long, default_value_t = 64)]
    payload_bytes: usize,
    /// Concurrent producers in the enqueue workloads.
    #[arg(long, default_value_t = 8)]
    producers: usize,
    /// Jobs per push_batch / multi-row insert in enqueue-batch.
    #[arg(long, default_value_t = 500)]
    push_batch: usize,
    /// Finished rows already in the table for the backlog workload.
    #[arg(long, default_value_t = 1_000_000)]
    backlog_rows: u64,
    /// Pushes per second in the latency workload.
    #[arg(long, default_value_t = 200)]
    latency_rate: u32,
    /// Jobs pushed in the latency workload.
    #[arg(long, default_value_t = 2_000)]
    latency_jobs: u64,
    /// Also drain with this many worker processes (each with `--workers` slots and prefetch
    /// `--batch`) against one database; 0 leaves that workload out.
    #[arg(long, default_value_t = 0)]
    worker_processes: usize,
    /// The concurrency limit of the `drain-limited` workload.
    #[arg(long, default_value_t = 16)]
    limit: u32,
    /// Internal: run as one worker process of the multi-process drain on this namespace.
    #[arg(long, hide = true)]
    child_drain: Option<String>,
    /// Skip the hand-written SQL baselines.
    #[arg(long)]
    no_baseline: bool,
    /// Print machine-readable results (JSON) on stdout; the table goes to stderr.
    #[arg(long)]
    json: bool,
    /// A fast end-to-end check: a few hundred jobs per workload on SQLite, and on PostgreSQL,
    /// MySQL and SQL Server (QUEUE_TEST_MSSQL_URL) when they answer (or when QUEUE_TEST_REQUIRE
    /// names them). Exits non-zero on any failure or correctness violation.
    #[arg(long)]
    smoke: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum WorkloadArg {
    Enqueue,
    EnqueueBatch,
    Drain,
    Latency,
    Backlog,
    /// The drain of a queue with `--limit` (and the unlimited drain it is compared with).
    DrainLimited,
    /// Single pushes with a uniqueness rule, beside plain single pushes.
    EnqueueUnique,
    /// `stats` on a table of `--backlog-rows` finished jobs, capped and exact.
    Stats,
    All,
}

impl WorkloadArg {
    fn expand(self, batch: usize, processes: usize, limit: u32) -> Vec<Workload> {
        let mut drains = if batch == 1 {
            vec![Workload::Drain { batch: 1 }]
        } else {
            vec![Workload::Drain { batch }, Workload::Drain { batch: 1 }]
        };
        if processes > 0 {
            drains.push(Workload::DrainProcesses { batch, processes });
        }
        match self {
            WorkloadArg::Enqueue => vec![Workload::Enqueue],
            WorkloadArg::EnqueueBatch => vec![Workload::EnqueueBatch],
            WorkloadArg::Drain => drains,
            WorkloadArg::Latency => vec![Workload::Latency],
            WorkloadArg::Backlog => vec![Workload::Backlog { batch }],
            WorkloadArg::EnqueueUnique => vec![Workload::EnqueueUnique],
            WorkloadArg::Stats => vec![Workload::Stats],
            WorkloadArg::DrainLimited => vec![
                Workload::Drain { batch },
                Workload::DrainLimited { batch, limit },
            ],
            WorkloadArg::All => {
                let mut all = vec![
                    Workload::Enqueue,
                    Workload::EnqueueBatch,
                    Workload::EnqueueUnique,
                ];
                all.extend(drains);
                all.push(Workload::DrainLimited { batch, limit });
                all.push(Workload::Latency);
                all.push(Workload::Backlog { batch });
                all.push(Workload::Stats);
                all
            }
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs what the command line asks; `Ok(false)` when a workload failed or a check was violated.
async fn run(cli: Cli) -> anyhow::Result<bool> {
    if let Some(namespace) = &cli.child_drain {
        let url = cli.url.clone().or_else(|| cli.backend.default_url());
        let server = backend::connect(cli.backend, url.as_deref()).await?;
        procs::child(server.as_ref(), namespace, cli.workers, cli.batch).await?;
        return Ok(true);
    }
    let machine = machine::Machine::detect();
    let mut report = Report::new(machine);
    if cli.smoke {
        let required = std::env::var("QUEUE_TEST_REQUIRE").unwrap_or_default();
        let settings = Settings {
            jobs: 300,
            workers: cli.workers,
            batch: cli.batch,
            payload_bytes: cli.payload_bytes,
            producers: cli.producers,
            push_batch: 100,
            backlog_rows: 5_000,
            latency_rate: 200,
            latency_jobs: 40,
            baseline: true,
            smoke: true,
        };
        let workloads = WorkloadArg::All.expand(cli.batch, 0, cli.limit);
        for kind in [
            BackendKind::Sqlite,
            BackendKind::Postgres,
            BackendKind::Mysql,
            BackendKind::Mssql,
        ] {
            let url = kind.default_url();
            let must = required
                .split(',')
                .any(|r| r.trim().eq_ignore_ascii_case(kind.name()));
            match backend::connect(kind, url.as_deref()).await {
                Ok(server) => {
                    let sr =
                        run_server(server.as_ref(), url.as_deref(), &workloads, &settings, true)
                            .await;
                    report.servers.push(sr);
                }
                Err(e) if !must && kind != BackendKind::Sqlite => {
                    eprintln!(
                        "SKIPPED {}: not reachable ({e:#}); set QUEUE_TEST_REQUIRE={} to make this a failure",
                        kind.name(),
                        kind.name()
                    );
                }
                Err(e) => {
                    let mut sr = ServerReport::unreachable(kind, format!("{e:#}"));
                    sr.failures.push(format!("cannot connect: {e:#}"));
                    report.servers.push(sr);
                }
            }
        }
    } else {
        let settings = Settings {
            jobs: cli.jobs,
            workers: cli.workers,
            batch: cli.batch,
            payload_bytes: cli.payload_bytes,
            producers: cli.producers,
            push_batch: cli.push_batch,
            backlog_rows: cli.backlog_rows,
            latency_rate: cli.latency_rate,
            latency_jobs: cli.latency_jobs,
            baseline: !cli.no_baseline,
            smoke: false,
        };
        settings.validate()?;
        if !(1..=queue_core::MAX_CONCURRENCY_LIMIT).contains(&cli.limit) {
            anyhow::bail!(
                "--limit must be between 1 and {}",
                queue_core::MAX_CONCURRENCY_LIMIT
            );
        }
        let url = cli.url.clone().or_else(|| cli.backend.default_url());
        let server = backend::connect(cli.backend, url.as_deref()).await?;
        let workloads = cli
            .workload
            .expand(cli.batch, cli.worker_processes, cli.limit);
        let sr = run_server(server.as_ref(), url.as_deref(), &workloads, &settings, true).await;
        report.servers.push(sr);
    }
    report.command = std::env::args().collect::<Vec<_>>().join(" ");
    if cli.json {
        eprint!("{}", report.render_text());
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render_text());
    }
    Ok(report.ok())
}

/// Runs every workload on one server; failures are recorded, not raised, so one broken
/// workload does not hide the others' numbers.
async fn run_server(
    server: &dyn Server,
    url: Option<&str>,
    workloads: &[Workload],
    settings: &Settings,
    progress: bool,
) -> ServerReport {
    let mut sr = ServerReport::new(server.kind());
    match server.describe().await {
        Ok(info) => sr.server = info,
        Err(e) => sr.failures.push(format!("describe server: {e:#}")),
    }
    eprintln!(
        "== {} ({}) ==",
        server.kind().name(),
        sr.server
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut fresh_drain: Option<f64> = None;
    for w in workloads {
        let started = std::time::Instant::now();
        let result = tokio::time::timeout(
            Duration::from_secs(settings.workload_timeout_secs()),
            workload::run(server, url, *w, settings, progress, fresh_drain),
        )
        .await;
        match result {
            Ok(Ok(r)) => {
                if let (Workload::Drain { batch }, Some(ours)) = (w, &r.ours) {
                    if *batch == settings.batch {
                        fresh_drain = Some(ours.rate());
                    }
                }
                sr.failures.extend(r.violations.iter().cloned());
                sr.results.push(r);
            }
            Ok(Err(e)) => sr.failures.push(format!("{}: {e:#}", w.name())),
            Err(_) => sr.failures.push(format!(
                "{}: did not finish within {:?}",
                w.name(),
                started.elapsed()
            )),
        }
    }
    sr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_runs_both_batch_sizes_unless_batch_is_one() {
        assert_eq!(
            WorkloadArg::Drain.expand(100, 0, 16),
            vec![Workload::Drain { batch: 100 }, Workload::Drain { batch: 1 }]
        );
        assert_eq!(
            WorkloadArg::Drain.expand(1, 0, 16),
            vec![Workload::Drain { batch: 1 }]
        );
        assert_eq!(WorkloadArg::All.expand(50, 0, 16).len(), 9);
        assert_eq!(
            WorkloadArg::Drain.expand(100, 4, 16).last(),
            Some(&Workload::DrainProcesses {
                batch: 100,
                processes: 4
            })
        );
    }

    #[test]
    fn cli_defaults_match_the_documented_ones() {
        let cli = Cli::parse_from(["queue-bench"]);
        assert_eq!(cli.backend, BackendKind::Sqlite);
        assert_eq!(cli.jobs, 20_000);
        assert_eq!(cli.workers, 16);
        assert_eq!(cli.batch, 100);
        assert_eq!(cli.backlog_rows, 1_000_000);
    }
}
