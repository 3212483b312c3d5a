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
use crate::workload::{Prefetch, Settings, Workload};
use queue_core::RateLimit;

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
    /// Which workload to run (`drain` runs both the drain at the worker's defaults, or at
    /// prefetch `--batch` when given, and the prefetch-1 drain).
    #[arg(long, value_enum, default_value_t = WorkloadArg::All)]
    workload: WorkloadArg,
    /// Jobs per workload.
    #[arg(long, default_value_t = 20_000)]
    jobs: u64,
    /// Worker slots (handlers at once) and, for the baselines, concurrent claim loops.
    #[arg(long, default_value_t = 16)]
    workers: usize,
    /// The drains' worker prefetch (the most one claim takes) and the batched baseline's claim
    /// size. Unset: the worker's defaults (it sizes its claims itself) and a baseline claim of
    /// 100.
    #[arg(long)]
    batch: Option<usize>,
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
    /// Also drain with this many worker processes (each with `--workers` slots, and prefetch
    /// `--batch` when given) against one database; 0 leaves that workload out.
    #[arg(long, default_value_t = 0)]
    worker_processes: usize,
    /// The concurrency limit of the `drain-limited` workload.
    #[arg(long, default_value_t = 16)]
    limit: u32,
    /// The `drain-keyed` workload: the jobs are spread round-robin over this many concurrency
    /// keys.
    #[arg(long, default_value_t = 100)]
    keys: u32,
    /// The `drain-keyed` workload: at most this many jobs of one key hold a live lease at once.
    #[arg(long, default_value_t = 1)]
    key_limit: u32,
    /// The `drain-rate` workload's rate limit: N/PERIOD, at most N starts in each window of
    /// PERIOD (a number with ms, s, m or h; a bare unit is one of it: `250/s`).
    #[arg(long, default_value = "250/100ms", value_parser = parse_rate)]
    rate: RateLimit,
    /// The `workflow` workload: jobs per workflow (a root, size - 2 middles after it, a join
    /// after all of them); `--jobs` / size workflows, at least one.
    #[arg(long, default_value_t = 1_000)]
    workflow_size: u64,
    /// The `sustained` workload: how long it pushes and drains at once, in seconds.
    #[arg(long, default_value_t = 300)]
    duration: u64,
    /// Internal: run as one worker process of the multi-process drain on this namespace.
    #[arg(long, hide = true)]
    child_drain: Option<String>,
    /// Skip the hand-written SQL baselines.
    #[arg(long)]
    no_baseline: bool,
    /// Open the queue with `keep_completed_jobs(false)`: a completion deletes the job (as
    /// Graphile Worker does) instead of keeping it as completed.
    #[arg(long)]
    discard_completed: bool,
    /// PostgreSQL: migrate each namespace with finished partitions of this many hours
    /// (`finished_partitions`): finished jobs move to partitions by state and finish time, and
    /// retention drops whole partitions.
    #[arg(long, value_name = "HOURS")]
    finished_partitions: Option<u32>,
    /// Print machine-readable results (JSON) on stdout; the table goes to stderr.
    #[arg(long)]
    json: bool,
    /// Leave out the prefetch-1 drain that `drain` runs beside the main one (at a million jobs
    /// it takes many minutes).
    #[arg(long)]
    no_single_drain: bool,
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
    /// The drain of `--jobs` jobs spread over `--keys` keys, each limited to `--key-limit` (and
    /// the drain without keys it is compared with).
    DrainKeyed,
    /// The drain of a queue with the rate limit `--rate` (and the unlimited drain).
    DrainRate,
    /// Key A's `--jobs` jobs and 100 late jobs of key B, drained with and without fair shares.
    Fairness,
    /// Single pushes with a uniqueness rule, beside plain single pushes.
    EnqueueUnique,
    /// `stats` on a table of `--backlog-rows` finished jobs, capped and exact.
    Stats,
    /// Fan-out / fan-in workflows of `--workflow-size` jobs (`--jobs` / size of them, at least
    /// one), pushed then drained (and the plain drain they are compared with).
    Workflow,
    /// Pushes and drains at once for `--duration` seconds (not part of `all`): the rate per 10 s
    /// window, and the last minute's beside the first.
    Sustained,
    /// The drain while another client holds a snapshot in the same database (PostgreSQL,
    /// MySQL/MariaDB), beside the same drain without it: the ratio, and what cleanup could not
    /// remove meanwhile.
    Horizon,
    /// A history of `--backlog-rows` completed jobs spread over days: the drain, and the drain
    /// again beside a retention round that deletes a tenth of the history.
    RetentionAtScale,
    All,
}

/// The queue controls of the workloads that set them.
#[derive(Clone, Copy, Debug)]
struct Controls {
    /// `drain-limited`'s concurrency limit.
    limit: u32,
    /// `drain-keyed`'s keys.
    keys: u32,
    /// `drain-keyed`'s key limit.
    key_limit: u32,
    /// `drain-rate`'s rate limit.
    rate: RateLimit,
    /// `workflow`'s jobs per workflow.
    workflow_size: u64,
    /// `sustained`'s seconds.
    duration: u64,
}

impl Controls {
    fn of(cli: &Cli) -> Self {
        Controls {
            limit: cli.limit,
            keys: cli.keys,
            key_limit: cli.key_limit,
            rate: cli.rate,
            workflow_size: cli.workflow_size,
            duration: cli.duration,
        }
    }

    /// The smoke run's: the command line's, with a rate that 300 jobs feel (3 windows) and
    /// workflows that 300 jobs hold three of.
    fn smoke(cli: &Cli) -> Self {
        Controls {
            rate: RateLimit {
                limit: 100,
                period: Duration::from_millis(50),
            },
            workflow_size: 100,
            ..Controls::of(cli)
        }
    }

    /// Checks the controls; the rate only when `rated` (a workload drains under it).
    fn check(&self, settings: &Settings, rated: bool) -> anyhow::Result<()> {
        let max = queue_core::MAX_CONCURRENCY_LIMIT;
        if !(1..=max).contains(&self.limit) {
            anyhow::bail!("--limit must be between 1 and {max}");
        }
        if !(1..=max).contains(&self.key_limit) {
            anyhow::bail!("--key-limit must be between 1 and {max}");
        }
        if self.keys == 0 {
            anyhow::bail!("--keys must be at least 1");
        }
        let most = queue_core::Limits::default().max_batch as u64;
        if !(3..=most).contains(&self.workflow_size) {
            anyhow::bail!(
                "--workflow-size must be between 3 (a root, a middle, a join) and {most} (the queue's max_batch)"
            );
        }
        let least = workload::least_duration(settings.jobs, self.rate);
        let timeout = Duration::from_secs(settings.workload_timeout_secs());
        if rated && least > timeout / 2 {
            anyhow::bail!(
                "--rate {}/{} ms lets {} jobs start in no less than {:.0} s, beyond half the workload's timeout ({} s)",
                self.rate.limit,
                self.rate.period.as_millis(),
                settings.jobs,
                least.as_secs_f64(),
                timeout.as_secs()
            );
        }
        Ok(())
    }
}

/// Parses `--rate`: `N/PERIOD`, e.g. `250/100ms`, `5000/1s`, `250/s`.
fn parse_rate(text: &str) -> Result<RateLimit, String> {
    let (n, period) = text
        .split_once('/')
        .ok_or_else(|| format!("expected N/PERIOD such as 250/100ms, got {text:?}"))?;
    let limit: u32 = n
        .trim()
        .parse()
        .map_err(|e| format!("the number of starts {n:?}: {e}"))?;
    let period = period.trim();
    let split = period
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("the period {period:?} needs a unit (ms, s, m or h)"))?;
    let (amount, unit) = period.split_at(split);
    let amount: u64 = if amount.is_empty() {
        1
    } else {
        amount
            .parse()
            .map_err(|e| format!("the period {period:?}: {e}"))?
    };
    let ms = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(format!("the period's unit {unit:?} is not ms, s, m or h")),
    };
    let period = Duration::from_millis(amount.saturating_mul(ms));
    RateLimit::new(limit, period).map_err(|e| e.to_string())
}

impl WorkloadArg {
    fn expand(self, batch: Prefetch, processes: usize, c: &Controls) -> Vec<Workload> {
        let one = Prefetch::Max(1);
        let mut drains = if batch == one {
            vec![Workload::Drain { batch: one }]
        } else {
            vec![Workload::Drain { batch }, Workload::Drain { batch: one }]
        };
        if processes > 0 {
            drains.push(Workload::DrainProcesses { batch, processes });
        }
        let limited = Workload::DrainLimited {
            batch,
            limit: c.limit,
        };
        let keyed = Workload::DrainKeyed {
            batch,
            keys: c.keys,
            key_limit: c.key_limit,
        };
        let rated = Workload::DrainRate {
            batch,
            rate: c.rate,
        };
        let workflow = Workload::Workflow {
            batch,
            size: c.workflow_size,
        };
        match self {
            WorkloadArg::Enqueue => vec![Workload::Enqueue],
            WorkloadArg::EnqueueBatch => vec![Workload::EnqueueBatch],
            WorkloadArg::Drain => drains,
            WorkloadArg::Latency => vec![Workload::Latency],
            WorkloadArg::Backlog => vec![Workload::Backlog { batch }],
            WorkloadArg::EnqueueUnique => vec![Workload::EnqueueUnique],
            WorkloadArg::Stats => vec![Workload::Stats],
            WorkloadArg::DrainLimited => vec![Workload::Drain { batch }, limited],
            WorkloadArg::DrainKeyed => vec![Workload::Drain { batch }, keyed],
            WorkloadArg::DrainRate => vec![Workload::Drain { batch }, rated],
            WorkloadArg::Fairness => vec![Workload::Fairness { batch }],
            WorkloadArg::Workflow => vec![Workload::Drain { batch }, workflow],
            WorkloadArg::Horizon => vec![Workload::Horizon { batch }],
            WorkloadArg::RetentionAtScale => vec![Workload::RetentionAtScale { batch }],
            WorkloadArg::Sustained => vec![Workload::Sustained {
                batch,
                seconds: c.duration,
            }],
            WorkloadArg::All => {
                let mut all = vec![
                    Workload::Enqueue,
                    Workload::EnqueueBatch,
                    Workload::EnqueueUnique,
                ];
                all.extend(drains);
                all.push(limited);
                all.push(keyed);
                all.push(rated);
                all.push(workflow);
                all.push(Workload::Fairness { batch });
                all.push(Workload::Latency);
                all.push(Workload::Backlog { batch });
                all.push(Workload::Horizon { batch });
                all.push(Workload::RetentionAtScale { batch });
                all.push(Workload::Stats);
                all
            }
        }
    }
}

/// The drains' prefetch the command line asks for.
fn prefetch(cli: &Cli) -> Prefetch {
    cli.batch.map_or(Prefetch::Auto, Prefetch::Max)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    backend::KEEP_COMPLETED.store(!cli.discard_completed, std::sync::atomic::Ordering::Relaxed);
    backend::FINISHED_PARTITIONS.store(
        cli.finished_partitions.unwrap_or(0),
        std::sync::atomic::Ordering::Relaxed,
    );
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
    if cli.finished_partitions.is_some() && cli.backend != BackendKind::Postgres {
        anyhow::bail!("--finished-partitions: finished partitions are PostgreSQL's only");
    }
    if let Some(namespace) = &cli.child_drain {
        let url = cli.url.clone().or_else(|| cli.backend.default_url());
        let server = backend::connect(cli.backend, url.as_deref()).await?;
        procs::child(server.as_ref(), namespace, cli.workers, prefetch(&cli)).await?;
        return Ok(true);
    }
    let machine = machine::Machine::detect();
    let mut report = Report::new(machine);
    if cli.smoke {
        let required = std::env::var("QUEUE_TEST_REQUIRE").unwrap_or_default();
        let settings = Settings {
            jobs: 300,
            workers: cli.workers,
            batch: prefetch(&cli),
            payload_bytes: cli.payload_bytes,
            producers: cli.producers,
            push_batch: 100,
            backlog_rows: 5_000,
            latency_rate: 200,
            latency_jobs: 40,
            baseline: true,
            smoke: true,
        };
        let workloads = WorkloadArg::All.expand(prefetch(&cli), 0, &Controls::smoke(&cli));
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
            batch: prefetch(&cli),
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
        let controls = Controls::of(&cli);
        let mut workloads = cli
            .workload
            .expand(prefetch(&cli), cli.worker_processes, &controls);
        if cli.no_single_drain && prefetch(&cli) != Prefetch::Max(1) {
            workloads
                .retain(|w| !matches!(w, Workload::Drain { batch } if *batch == Prefetch::Max(1)));
        }
        let rated = workloads
            .iter()
            .any(|w| matches!(w, Workload::DrainRate { .. }));
        controls.check(&settings, rated)?;
        let url = cli.url.clone().or_else(|| cli.backend.default_url());
        let server = backend::connect(cli.backend, url.as_deref()).await?;
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

    fn controls() -> Controls {
        Controls::of(&Cli::parse_from(["queue-bench"]))
    }

    #[test]
    fn drain_runs_both_batch_sizes_unless_batch_is_one() {
        let c = controls();
        assert_eq!(
            WorkloadArg::Drain.expand(Prefetch::Max(100), 0, &c),
            vec![
                Workload::Drain {
                    batch: Prefetch::Max(100)
                },
                Workload::Drain {
                    batch: Prefetch::Max(1)
                }
            ]
        );
        assert_eq!(
            WorkloadArg::Drain.expand(Prefetch::Max(1), 0, &c),
            vec![Workload::Drain {
                batch: Prefetch::Max(1)
            }]
        );
        assert_eq!(WorkloadArg::All.expand(Prefetch::Max(50), 0, &c).len(), 15);
        assert_eq!(
            WorkloadArg::Drain.expand(Prefetch::Max(100), 4, &c).last(),
            Some(&Workload::DrainProcesses {
                batch: Prefetch::Max(100),
                processes: 4
            })
        );
    }

    #[test]
    fn controlled_drains_run_beside_the_unlimited_drain() {
        let c = Controls {
            limit: 8,
            keys: 50,
            key_limit: 2,
            rate: RateLimit::new(10, Duration::from_millis(20)).unwrap(),
            workflow_size: 50,
            duration: 300,
        };
        assert_eq!(
            WorkloadArg::DrainKeyed.expand(Prefetch::Max(100), 0, &c),
            vec![
                Workload::Drain {
                    batch: Prefetch::Max(100)
                },
                Workload::DrainKeyed {
                    batch: Prefetch::Max(100),
                    keys: 50,
                    key_limit: 2
                }
            ]
        );
        assert_eq!(
            WorkloadArg::DrainRate.expand(Prefetch::Max(100), 0, &c),
            vec![
                Workload::Drain {
                    batch: Prefetch::Max(100)
                },
                Workload::DrainRate {
                    batch: Prefetch::Max(100),
                    rate: c.rate
                }
            ]
        );
        assert_eq!(
            WorkloadArg::Fairness.expand(Prefetch::Max(100), 0, &c),
            vec![Workload::Fairness {
                batch: Prefetch::Max(100)
            }]
        );
        assert_eq!(
            WorkloadArg::Workflow.expand(Prefetch::Max(100), 0, &c),
            vec![
                Workload::Drain {
                    batch: Prefetch::Max(100)
                },
                Workload::Workflow {
                    batch: Prefetch::Max(100),
                    size: 50
                }
            ]
        );
        let all = WorkloadArg::All.expand(Prefetch::Max(100), 0, &c);
        for w in [
            Workload::DrainLimited {
                batch: Prefetch::Max(100),
                limit: 8,
            },
            Workload::DrainKeyed {
                batch: Prefetch::Max(100),
                keys: 50,
                key_limit: 2,
            },
            Workload::DrainRate {
                batch: Prefetch::Max(100),
                rate: c.rate,
            },
            Workload::Fairness {
                batch: Prefetch::Max(100),
            },
            Workload::Workflow {
                batch: Prefetch::Max(100),
                size: 50,
            },
        ] {
            assert!(all.contains(&w), "{w:?} not in {all:?}");
        }
        // After the unlimited drain, whose rate they are compared with.
        let drain = all.iter().position(|w| {
            *w == Workload::Drain {
                batch: Prefetch::Max(100),
            }
        });
        let keyed = all
            .iter()
            .position(|w| matches!(w, Workload::DrainKeyed { .. }));
        assert!(drain < keyed);
    }

    #[test]
    fn rates_parse_as_starts_per_period() {
        let r = parse_rate("250/100ms").unwrap();
        assert_eq!((r.limit, r.period), (250, Duration::from_millis(100)));
        let r = parse_rate("5000/s").unwrap();
        assert_eq!((r.limit, r.period), (5000, Duration::from_secs(1)));
        let r = parse_rate("60/2m").unwrap();
        assert_eq!(r.period, Duration::from_secs(120));
        for bad in ["250", "0/1s", "10/5ms", "10/1d", "x/1s", "10/ms1", "10/"] {
            assert!(parse_rate(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_rate_too_slow_for_the_jobs_is_refused() {
        let cli = Cli::parse_from(["queue-bench", "--jobs", "1000000", "--rate", "1/1s"]);
        let settings = Settings {
            jobs: cli.jobs,
            workers: 1,
            batch: Prefetch::Max(1),
            payload_bytes: 64,
            producers: 1,
            push_batch: 1,
            backlog_rows: 0,
            latency_rate: 1,
            latency_jobs: 1,
            baseline: false,
            smoke: false,
        };
        assert!(Controls::of(&cli).check(&settings, true).is_err());
        // Unless no workload drains under the rate.
        assert!(Controls::of(&cli).check(&settings, false).is_ok());
        assert!(controls().check(&settings, true).is_ok());
        let mut c = controls();
        c.key_limit = 0;
        assert!(c.check(&settings, false).is_err());
        for (size, ok) in [(2, false), (3, true), (10_000, true), (10_001, false)] {
            let c = Controls {
                workflow_size: size,
                ..controls()
            };
            assert_eq!(c.check(&settings, false).is_ok(), ok, "size {size}");
        }
    }

    #[test]
    fn cli_defaults_match_the_documented_ones() {
        let cli = Cli::parse_from(["queue-bench"]);
        assert_eq!(cli.backend, BackendKind::Sqlite);
        assert_eq!(cli.jobs, 20_000);
        assert_eq!(cli.workers, 16);
        assert_eq!(cli.batch, None);
        assert_eq!(cli.backlog_rows, 1_000_000);
        assert_eq!((cli.keys, cli.key_limit), (100, 1));
        assert_eq!(cli.workflow_size, 1_000);
        assert_eq!(
            (cli.rate.limit, cli.rate.period),
            (250, Duration::from_millis(100))
        );
    }
}
