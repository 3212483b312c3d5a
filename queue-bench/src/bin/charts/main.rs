//! `charts`: the charts and tables of `BENCHMARKS.md`, made from the results recorded in the
//! repository (`queue-bench/results/sitting/*.tsv`, whose format that folder's README gives),
//! and a sitting's log read into such a file.
//!
//! ```text
//! charts render queue-bench/results/sitting/2026-12-02.tsv --out docs
//! charts tables queue-bench/results/sitting/2026-12-02.tsv
//! charts import n100k.log --out-dir w100k/out > 2026-12-02.tsv
//! ```

mod draw;
mod results;
mod sitting;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use crate::draw::{Bar, Bars};
use crate::results::{backend_name, by_config, rank, rates, sizes, thousands, Row, Spread};

/// Charts and tables of the recorded benchmark results.
#[derive(Parser, Debug)]
#[command(name = "charts", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Writes the SVG charts (bench-drain.svg, bench-drain-sizes.svg, bench-backends.svg).
    Render {
        /// Results files, read together.
        #[arg(required = true)]
        results: Vec<PathBuf>,
        /// The folder the charts are written to.
        #[arg(long, default_value = "docs")]
        out: PathBuf,
    },
    /// Prints the Markdown tables of the results.
    Tables {
        /// Results files, read together.
        #[arg(required = true)]
        results: Vec<PathBuf>,
    },
    /// Prints the measurements of sitting.sh logs as a results file.
    Import {
        /// sitting.sh's output (its stdout and stderr).
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// Each log's output folder (sitting.sh's WORK/out), in the order of the logs: its
        /// queue-bench JSON gives the tuned drains' options and the enqueues' jobs.
        #[arg(long)]
        out_dir: Vec<PathBuf>,
        /// A comment line to put at the top of the file (repeatable).
        #[arg(long)]
        comment: Vec<String>,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Render { results, out } => {
            let rows = read(&results)?;
            std::fs::create_dir_all(&out).with_context(|| format!("creating {out:?}"))?;
            for (name, chart) in charts(&rows) {
                let path = out.join(name);
                std::fs::write(&path, draw::render(&chart)?)
                    .with_context(|| format!("writing {path:?}"))?;
                println!("{}", path.display());
            }
        }
        Command::Tables { results } => print!("{}", tables(&read(&results)?)),
        Command::Import {
            logs,
            out_dir,
            comment,
        } => {
            if !out_dir.is_empty() && out_dir.len() != logs.len() {
                bail!("give one --out-dir per log, or none");
            }
            let mut rows = Vec::new();
            for (i, log) in logs.iter().enumerate() {
                let extra = match out_dir.get(i) {
                    Some(d) => sitting::Extra::from_dir(d)?,
                    None => sitting::Extra::default(),
                };
                let text =
                    std::fs::read_to_string(log).with_context(|| format!("reading {log:?}"))?;
                let (r, other) = sitting::parse(&text, &extra);
                for line in other {
                    eprintln!("{}: not a measurement: {line}", log.display());
                }
                rows.extend(r);
            }
            print!("{}", results::write(&comment, &rows));
        }
    }
    Ok(())
}

/// The rows of every file, in order.
fn read(files: &[PathBuf]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).with_context(|| format!("reading {f:?}"))?;
        rows.extend(results::parse(&text).with_context(|| format!("{}", f.display()))?);
    }
    Ok(rows)
}

/// The size of the PostgreSQL drain the main chart and table show: the one most configurations
/// were measured at (the largest of those).
fn main_size(rows: &[Row]) -> Option<u64> {
    sizes(rows, "postgres", "drain")
        .into_iter()
        .max_by_key(|&n| (by_config(rows, "postgres", "drain", n).len(), n))
}

/// The configurations of one workload, dbqueue first and the hand-written SQL last.
fn ranked<'a>(
    rows: &'a [Row],
    backend: &str,
    workload: &str,
    jobs: u64,
) -> Vec<((&'a str, &'a str), Vec<&'a Row>)> {
    let mut g = by_config(rows, backend, workload, jobs);
    g.sort_by_key(|((system, _), _)| rank(system));
    g
}

/// Each system's configurations get their colour: dbqueue's shades of blue in order, the other
/// queues one colour, the hand-written SQL grey.
fn colour(system: &str, nth_of_dbqueue: usize) -> plotters::style::RGBColor {
    match rank(system) {
        0 => draw::OURS[nth_of_dbqueue.min(draw::OURS.len() - 1)],
        2 => draw::HAND,
        _ => draw::PEER,
    }
}

fn jobs_text(n: u64) -> String {
    format!("{} jobs", thousands(n as f64))
}

/// The charts the rows make, with their file names.
fn charts(rows: &[Row]) -> Vec<(&'static str, Bars)> {
    let mut out = Vec::new();
    let note =
        "Bars: the median of the runs; lines: the least to the most. Compare within one sitting."
            .to_owned();
    if let Some(n) = main_size(rows) {
        let configs = ranked(rows, "postgres", "drain", n);
        let mut ours = 0;
        let mut groups = Vec::new();
        let mut bars = Vec::new();
        for ((system, setting), rs) in &configs {
            let c = colour(system, ours);
            if rank(system) == 0 {
                ours += 1;
            }
            groups.push(vec![system.to_string(), setting.to_string()]);
            bars.push(vec![
                Spread::of(&rates(rs)).map(|spread| Bar { spread, colour: c })
            ]);
        }
        out.push((
            "bench-drain.svg",
            Bars {
                title: format!(
                    "PostgreSQL: drain of {}, 16 at a time (jobs/s)",
                    jobs_text(n)
                ),
                y_desc: "jobs/s".into(),
                groups,
                series: vec![("jobs/s".into(), draw::OURS[0])],
                bars,
                note: note.clone(),
                empty: "no figure".into(),
            },
        ));
    }

    // The drain at every size, for the configurations measured at more than one.
    let ns = sizes(rows, "postgres", "drain");
    if ns.len() > 1 {
        let mut configs: Vec<(&str, &str)> = Vec::new();
        for &n in &ns {
            for (c, _) in ranked(rows, "postgres", "drain", n) {
                if !configs.contains(&c) {
                    configs.push(c);
                }
            }
        }
        configs.retain(|c| {
            ns.iter()
                .filter(|&&n| {
                    by_config(rows, "postgres", "drain", n)
                        .iter()
                        .any(|(k, _)| k == c)
                })
                .count()
                > 1
        });
        configs.sort_by_key(|(system, _)| rank(system));
        let series: Vec<(String, plotters::style::RGBColor)> = configs
            .iter()
            .enumerate()
            .map(|(i, (system, setting))| {
                (
                    format!("{system}, {setting}"),
                    draw::SERIES[i % draw::SERIES.len()],
                )
            })
            .collect();
        let bars = ns
            .iter()
            .map(|&n| {
                let g = by_config(rows, "postgres", "drain", n);
                configs
                    .iter()
                    .zip(&series)
                    .map(|(c, (_, colour))| {
                        g.iter()
                            .find(|(k, _)| k == c)
                            .and_then(|(_, rs)| Spread::of(&rates(rs)))
                            .map(|spread| Bar {
                                spread,
                                colour: *colour,
                            })
                    })
                    .collect()
            })
            .collect();
        out.push((
            "bench-drain-sizes.svg",
            Bars {
                title: "PostgreSQL: the drain at each size (jobs/s)".into(),
                y_desc: "jobs/s".into(),
                groups: ns.iter().map(|&n| vec![jobs_text(n)]).collect(),
                series,
                bars,
                note: note.clone(),
                empty: String::new(),
            },
        ));
    }

    // dbqueue's drain on each backend, each of its settings (with one backend, the charts
    // above show it all).
    let backends: Vec<&str> = ["sqlite", "postgres", "mysql", "mssql"]
        .into_iter()
        .filter(|b| {
            rows.iter()
                .any(|r| r.backend == *b && r.workload == "drain" && r.system == "dbqueue")
        })
        .collect();
    if backends.len() > 1 {
        let size_of = |b: &str| {
            let s = sizes(rows, b, "drain");
            match main_size(rows) {
                Some(n) if b == "postgres" && s.contains(&n) => Some(n),
                _ => s.last().copied(),
            }
        };
        let mut settings: Vec<&str> = Vec::new();
        for &b in &backends {
            if let Some(n) = size_of(b) {
                for ((system, setting), _) in by_config(rows, b, "drain", n) {
                    if system == "dbqueue" && !settings.contains(&setting) {
                        settings.push(setting);
                    }
                }
            }
        }
        let series: Vec<(String, plotters::style::RGBColor)> = settings
            .iter()
            .enumerate()
            .map(|(i, s)| (s.to_string(), draw::OURS[i.min(draw::OURS.len() - 1)]))
            .collect();
        let mut groups = Vec::new();
        let mut bars = Vec::new();
        for &b in &backends {
            let Some(n) = size_of(b) else { continue };
            let g = by_config(rows, b, "drain", n);
            groups.push(vec![backend_name(b).to_owned(), jobs_text(n)]);
            bars.push(
                settings
                    .iter()
                    .zip(&series)
                    .map(|(s, (_, colour))| {
                        g.iter()
                            .find(|(k, _)| *k == ("dbqueue", *s))
                            .and_then(|(_, rs)| Spread::of(&rates(rs)))
                            .map(|spread| Bar {
                                spread,
                                colour: *colour,
                            })
                    })
                    .collect(),
            );
        }
        out.push((
            "bench-backends.svg",
            Bars {
                title: "dbqueue's drain on each backend, 16 at a time (jobs/s)".into(),
                y_desc: "jobs/s".into(),
                groups,
                series,
                bars,
                note,
                empty: String::new(),
            },
        ));
    }
    out
}

/// `20,857 (19,001–21,400)`, or the one figure, or `failed`.
fn cell(rs: &[&Row]) -> String {
    match Spread::of(&rates(rs)) {
        None if rs.is_empty() => String::new(),
        None => "failed".into(),
        Some(s) if s.runs == 1 => thousands(s.median),
        Some(s) => format!(
            "{} ({}–{})",
            thousands(s.median),
            thousands(s.min),
            thousands(s.max)
        ),
    }
}

/// The loads the rows started at: `2.3` or `2.3–4.1`.
fn loads(rs: &[&Row]) -> String {
    let l: Vec<f64> = rs.iter().filter_map(|r| r.load()).collect();
    match Spread::of(&l) {
        None => String::new(),
        Some(s) if s.min == s.max => format!("{:.2}", s.min),
        Some(s) => format!("{:.2}–{:.2}", s.min, s.max),
    }
}

/// How many measurements, and how many of them failed.
fn runs(rs: &[&Row]) -> String {
    let failed = rs.iter().filter(|r| r.rate().is_none()).count();
    if failed == 0 {
        rs.len().to_string()
    } else {
        format!("{} ({failed} failed)", rs.len())
    }
}

/// The tables of BENCHMARKS.md.
fn tables(rows: &[Row]) -> String {
    let mut out = String::new();
    if let Some(n) = main_size(rows) {
        // The enqueues of the largest size (the sitting of the main drain).
        let en = rows
            .iter()
            .filter(|r| r.backend == "postgres" && r.workload == "enqueue")
            .map(|r| r.jobs)
            .max()
            .unwrap_or(0);
        let enq = |system: &str, workload: &str| -> String {
            let rs: Vec<&Row> = rows
                .iter()
                .filter(|r| {
                    r.backend == "postgres"
                        && r.workload == workload
                        && r.system == system
                        && r.jobs == en
                })
                .collect();
            cell(&rs)
        };
        let _ = writeln!(
            out,
            "| system | setting | drain, {}: jobs/s, median (least–most) | ratio to the first row | runs | load at start | enqueue of {}, one per call | batches of 500 |",
            jobs_text(n),
            thousands(en as f64)
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|");
        let mut seen: Vec<&str> = Vec::new();
        let configs = ranked(rows, "postgres", "drain", n);
        let first = configs
            .first()
            .and_then(|(_, rs)| Spread::of(&rates(rs)))
            .map(|s| s.median);
        for ((system, setting), rs) in configs {
            let ratio = match (Spread::of(&rates(&rs)), first) {
                (Some(s), Some(f)) if f > 0.0 => format!("{:.2}", s.median / f),
                _ => String::new(),
            };
            let (one, batch) = if seen.contains(&system) {
                (String::new(), String::new())
            } else {
                seen.push(system);
                (enq(system, "enqueue"), enq(system, "enqueue-batch"))
            };
            let _ = writeln!(
                out,
                "| {system} | {setting} | {} | {ratio} | {} | {} | {one} | {batch} |",
                cell(&rs),
                runs(&rs),
                loads(&rs)
            );
        }
        out.push('\n');
    }

    for workload in ["drain", "drain-prefetch-1"] {
        let ns = sizes(rows, "postgres", workload);
        if ns.is_empty() || (workload == "drain" && ns.len() < 2) {
            continue;
        }
        let _ = writeln!(
            out,
            "PostgreSQL, `{workload}`, jobs/s, median (least–most):\n"
        );
        let mut header = "| system | setting |".to_owned();
        let mut rule = "|---|---|".to_owned();
        for &n in &ns {
            let _ = write!(header, " {} |", jobs_text(n));
            rule.push_str("---:|");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        let mut configs: Vec<(&str, &str)> = Vec::new();
        for &n in &ns {
            for (c, _) in ranked(rows, "postgres", workload, n) {
                if !configs.contains(&c) {
                    configs.push(c);
                }
            }
        }
        configs.sort_by_key(|(system, _)| rank(system));
        for c in configs {
            let mut line = format!("| {} | {} |", c.0, c.1);
            for &n in &ns {
                let g = by_config(rows, "postgres", workload, n);
                let text = g
                    .iter()
                    .find(|(k, _)| *k == c)
                    .map(|(_, rs)| cell(rs))
                    .unwrap_or_default();
                let _ = write!(line, " {text} |");
            }
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
    }

    // dbqueue and the hand-written SQL on every backend: each rep's figure with its load, since
    // reps run at different loads compare within a rep.
    let most_reps = rows.iter().map(|r| r.rep).max().unwrap_or(1);
    let _ = write!(out, "| backend | jobs | system | setting |");
    let mut rule = "|---|---:|---|---|".to_owned();
    for rep in 1..=most_reps {
        let _ = write!(out, " rep {rep} (load) |");
        rule.push_str("---:|");
    }
    let _ = writeln!(out, "\n{rule}");
    for b in ["sqlite", "postgres", "mysql", "mssql"] {
        for n in sizes(rows, b, "drain") {
            for ((system, setting), rs) in ranked(rows, b, "drain", n) {
                if rank(system) == 1 {
                    continue;
                }
                let mut line = format!(
                    "| {} | {} | {system} | {setting} |",
                    backend_name(b),
                    thousands(n as f64)
                );
                for rep in 1..=most_reps {
                    let cells: Vec<String> = rs
                        .iter()
                        .filter(|r| r.rep == rep)
                        .map(|r| match r.rate() {
                            Some(x) => format!("{} ({})", thousands(x), r.load),
                            None => format!("failed ({})", r.load),
                        })
                        .collect();
                    let _ = write!(line, " {} |", cells.join("; "));
                }
                let _ = writeln!(out, "{line}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = "\
system\tsetting\tbackend\tworkload\tjobs\trep\tjobs_per_sec\tload
dbqueue\tworker defaults\tpostgres\tdrain\t1000\t1\t20000\t1.5
hand-written SQL\tclaims of 100\tpostgres\tdrain\t1000\t1\t30000\t1.5
Graphile Worker\tbest configuration\tpostgres\tdrain\t1000\t1\t25000\t2.0
dbqueue\tworker defaults\tpostgres\tdrain\t1000\t2\t22000\t1.7
hand-written SQL\tclaims of 100\tpostgres\tdrain\t1000\t2\t31000\t1.7
Graphile Worker\tbest configuration\tpostgres\tdrain\t1000\t2\tfailed\t2.1
dbqueue\tworker defaults\tpostgres\tdrain\t500\t1\t15000\t1.1
Graphile Worker\tbest configuration\tpostgres\tdrain\t500\t1\t14000\t1.2
dbqueue\tworker defaults\tsqlite\tdrain\t500\t1\t40000\t1.0
dbqueue\tprefetch 500\tsqlite\tdrain\t500\t1\t45000\t1.0
dbqueue\tdefaults\tpostgres\tenqueue\t200\t1\t6000\t1.0
Graphile Worker\tdefaults\tpostgres\tenqueue\t200\t1\t600.5\t1.0
";

    #[test]
    fn the_fixture_renders_every_chart_with_its_systems() {
        let rows = results::parse(FIXTURE).unwrap();
        let charts = charts(&rows);
        let names: Vec<&str> = charts.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "bench-drain.svg",
                "bench-drain-sizes.svg",
                "bench-backends.svg"
            ]
        );
        let drain = &charts[0].1;
        assert!(drain.title.contains("1,000 jobs"));
        assert_eq!(drain.empty, "no figure");
        // dbqueue first, the hand-written SQL last.
        let systems: Vec<&str> = drain.groups.iter().map(|g| g[0].as_str()).collect();
        assert_eq!(systems, ["dbqueue", "Graphile Worker", "hand-written SQL"]);
        let svg = draw::render(drain).unwrap();
        for s in systems {
            assert!(svg.contains(s), "{s} is not in the chart");
        }
        let medians: Vec<f64> = drain
            .bars
            .iter()
            .map(|g| g[0].unwrap().spread.median)
            .collect();
        assert_eq!(medians, [21_000.0, 25_000.0, 30_500.0]);
        let backends = &charts[2].1;
        assert_eq!(backends.groups[0][0], "SQLite");
        assert_eq!(backends.groups[1][0], "PostgreSQL");
        assert!(backends.bars[1][1].is_none(), "no tuned run on PostgreSQL");
    }

    #[test]
    fn the_tables_show_each_configuration_with_its_failures() {
        let rows = results::parse(FIXTURE).unwrap();
        let t = tables(&rows);
        assert!(
            t.contains("| dbqueue | worker defaults | 21,000 (20,000–22,000) | 1.00 | 2 | 1.50–1.70 | 6,000 |"),
            "{t}"
        );
        assert!(
            t.contains("| Graphile Worker | best configuration | 25,000 | 1.19 | 2 (1 failed) |"),
            "{t}"
        );
        assert!(
            t.contains("| SQLite | 500 | dbqueue | prefetch 500 | 45,000 (1.0) |  |"),
            "{t}"
        );
        assert!(
            t.contains(
                "| PostgreSQL | 1,000 | dbqueue | worker defaults | 20,000 (1.5) | 22,000 (1.7) |"
            ),
            "{t}"
        );
        assert!(
            !t.contains("| PostgreSQL | 1,000 | Graphile Worker |"),
            "{t}"
        );
    }
}
