//! The output of `sitting.sh` (queue-bench beside the other PostgreSQL job queues), and lines
//! of the same form for queue-bench alone on another backend (`rep 1 sqlite default
//! (N=100000): drain (prefetch auto): ours ... (load ...)`), read into rows of a results file.
//! The figures are copied as printed, never recomputed.

use std::path::Path;

use anyhow::{Context, Result};

use crate::results::{Row, FAILED};

/// What the log does not say and the sitting's output folder does.
#[derive(Clone, Debug, Default)]
pub(crate) struct Extra {
    /// The tuned drains' settings, by backend and rep: queue-bench's options beyond the
    /// sitting's own.
    pub(crate) tuned: Vec<(String, u32, String)>,
    /// The jobs of the enqueue workloads (`EN`).
    pub(crate) enqueue_jobs: Option<u64>,
}

impl Extra {
    /// Reads the queue-bench JSON that `sitting.sh` leaves in its output folder
    /// (`ourstuned-drain-<rep>.json`), or that a run on another backend left
    /// (`out-<backend>-tuned-<rep>.json`).
    pub(crate) fn from_dir(dir: &Path) -> Result<Extra> {
        let mut extra = Extra::default();
        for entry in std::fs::read_dir(dir).with_context(|| format!("reading {dir:?}"))? {
            let path = entry?.path();
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
            else {
                continue;
            };
            let command = || -> Result<Option<String>> {
                let text = std::fs::read_to_string(&path)?;
                if text.trim().is_empty() {
                    return Ok(None);
                }
                let json: serde_json::Value =
                    serde_json::from_str(&text).with_context(|| format!("{path:?}"))?;
                Ok(json["command"].as_str().map(str::to_owned))
            };
            let tuned = name
                .strip_prefix("ourstuned-drain-")
                .map(|r| ("postgres", r))
                .or_else(|| {
                    let rest = name.strip_prefix("out-")?;
                    let (backend, r) = rest.split_once("-tuned-")?;
                    Some((backend, r))
                });
            if let Some((backend, rep)) = tuned {
                if let (Ok(rep), Some(c)) = (rep.parse(), command()?) {
                    extra
                        .tuned
                        .push((backend.to_owned(), rep, tuned_setting(&c)));
                }
            } else if name == "ours-enqueue" {
                if let Some(c) = command()? {
                    extra.enqueue_jobs = option(&c, "--jobs").and_then(|j| j.parse().ok());
                }
            }
        }
        Ok(extra)
    }
}

/// The setting a tuned drain's command line gives, beyond what `sitting.sh` passes every run
/// (`--backend`, `--workload`, `--jobs`, `--url`, `--json`, and `--no-single-drain`, which
/// leaves out the prefetch-1 drain): `--batch 500` is "prefetch 500".
fn tuned_setting(command: &str) -> String {
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let value = words.get(i + 1).copied().unwrap_or("");
        match w {
            "--backend" | "--workload" | "--jobs" | "--url" => i += 2,
            "--json" | "--no-single-drain" => i += 1,
            "--batch" => {
                parts.push(format!("prefetch {value}"));
                i += 2;
            }
            "--discard-completed" => {
                parts.push("completed jobs deleted".to_owned());
                i += 1;
            }
            _ if w.starts_with("--") && !value.starts_with("--") && !value.is_empty() => {
                parts.push(format!("{w} {value}"));
                i += 2;
            }
            _ => {
                parts.push(w.to_owned());
                i += 1;
            }
        }
    }
    if parts.is_empty() {
        "worker defaults".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The value after `name` in a command line.
fn option<'a>(command: &'a str, name: &str) -> Option<&'a str> {
    let mut words = command.split_whitespace();
    words.find(|w| *w == name)?;
    words.next()
}

/// A peer's name as the tables give it.
fn peer(system: &str) -> Option<&'static str> {
    Some(match system {
        "graphile" => "Graphile Worker",
        "pgboss" => "pg-boss",
        "pgqueuer" => "PgQueuer",
        "obanpy" => "Oban for Python",
        _ => return None,
    })
}

/// The system name of queue-bench's hand-written SQL.
pub(crate) const HAND_SQL: &str = "hand-written SQL";

/// Splits `... (load 2.72)` into what comes before and the load.
fn split_load(line: &str) -> Option<(&str, &str)> {
    let (body, load) = line.strip_suffix(')')?.rsplit_once(" (load ")?;
    Some((body, load))
}

/// The results of one queue-bench line: `drain (prefetch auto): ours 20857 hand-SQL 31612
/// x0.66 drain (prefetch 1): ...`, as (prefetch, ours, hand-written SQL).
fn ours_drains(body: &str) -> Vec<(&str, &str, &str)> {
    let w: Vec<&str> = body.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 7 <= w.len() {
        if w[i] == "drain"
            && w[i + 1] == "(prefetch"
            && w[i + 3] == "ours"
            && w[i + 5] == "hand-SQL"
        {
            let prefetch = w[i + 2].trim_end_matches("):");
            out.push((prefetch, w[i + 4], w[i + 6]));
            i += 7;
            continue;
        }
        i += 1;
    }
    out
}

/// A peer's figure: a number, or the sitting's "failed, see ..." (any text that is not one).
fn figure(text: &str) -> String {
    let t = text.trim();
    if t.parse::<f64>().is_ok() {
        t.to_owned()
    } else {
        FAILED.to_owned()
    }
}

/// Reads a sitting's log. Lines that are not a measurement (the harnesses' messages) are
/// returned apart, so that the caller can show them.
pub(crate) fn parse(log: &str, extra: &Extra) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut other = Vec::new();
    let enqueue_jobs = extra.enqueue_jobs.unwrap_or(20_000);
    for line in log.lines() {
        let line = line.trim_end();
        let before = rows.len();
        if let Some((body, load)) = split_load(line) {
            if let Some(rest) = body.strip_prefix("rep ") {
                drain_line(rest, load, extra, &mut rows);
            } else {
                enqueue_line(body, load, enqueue_jobs, &mut rows);
            }
        }
        if rows.len() == before && !line.trim().is_empty() && !line.starts_with("summary: ") {
            other.push(line.to_owned());
        }
    }
    (rows, other)
}

/// `rep 1 graphile drain (N=100000): 18265.9 (load 4.34)` or `rep 1 sqlite tuned
/// (N=100000): drain (prefetch 500): ours ...`, after `rep `.
fn drain_line(rest: &str, load: &str, extra: &Extra, rows: &mut Vec<Row>) {
    let Some((head, body)) = rest.split_once(": ") else {
        return;
    };
    let mut words = head.split_whitespace();
    let (Some(rep), Some(first), Some(second)) = (words.next(), words.next(), words.next()) else {
        return;
    };
    let Ok(rep) = rep.parse::<u32>() else {
        return;
    };
    // sitting.sh's `ours drain`, `ourstuned drain`, `graphile drain`, ...; or a backend and
    // `default` or `tuned`.
    let (backend, sys) = match (first, second) {
        (sys, "drain") => ("postgres", sys),
        ("sqlite" | "postgres" | "mysql" | "mssql", "default") => (first, "ours"),
        ("sqlite" | "postgres" | "mysql" | "mssql", "tuned") => (first, "ourstuned"),
        _ => return,
    };
    // Before `(N=...)` was printed, every drain had sitting.sh's default of 20,000 jobs.
    let jobs = words
        .next()
        .and_then(|n| {
            n.strip_prefix("(N=")?
                .strip_suffix(')')?
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(20_000);
    let row = |system: &str, setting: &str, workload: &str, rate: &str| Row {
        system: system.to_owned(),
        setting: setting.to_owned(),
        backend: backend.to_owned(),
        workload: workload.to_owned(),
        jobs,
        rep,
        jobs_per_sec: rate.to_owned(),
        load: load.to_owned(),
    };
    match sys {
        "ours" | "ourstuned" => {
            let tuned = sys == "ourstuned";
            let drains = ours_drains(body);
            if drains.is_empty() {
                let setting = if tuned {
                    tuned_of(extra, backend, rep, None)
                } else {
                    "worker defaults".to_owned()
                };
                rows.push(row("dbqueue", &setting, "drain", FAILED));
                return;
            }
            for (i, (prefetch, ours, hand)) in drains.into_iter().enumerate() {
                if i == 0 {
                    let (setting, claims) = if tuned {
                        (
                            tuned_of(extra, backend, rep, Some(prefetch)),
                            prefetch.to_owned(),
                        )
                    } else if prefetch == "auto" {
                        ("worker defaults".to_owned(), "100".to_owned())
                    } else {
                        (format!("prefetch {prefetch}"), prefetch.to_owned())
                    };
                    rows.push(row("dbqueue", &setting, "drain", ours));
                    rows.push(row(HAND_SQL, &format!("claims of {claims}"), "drain", hand));
                } else if prefetch == "1" && !tuned {
                    // The prefetch-1 drain of the tuned run carries the tuned options too: only
                    // the default run's is recorded.
                    rows.push(row("dbqueue", "prefetch 1", "drain-prefetch-1", ours));
                    rows.push(row(HAND_SQL, "claims of 1", "drain-prefetch-1", hand));
                }
            }
        }
        _ => {
            if let Some(name) = peer(sys) {
                rows.push(row(name, "best configuration", "drain", &figure(body)));
            }
        }
    }
}

/// The tuned drain's setting: from its JSON, else from the prefetch the log shows.
fn tuned_of(extra: &Extra, backend: &str, rep: u32, prefetch: Option<&str>) -> String {
    let of_backend = || extra.tuned.iter().filter(|(b, _, _)| b == backend);
    if let Some((_, _, s)) = of_backend().find(|(_, r, _)| *r == rep) {
        return s.clone();
    }
    if let Some((_, _, s)) = of_backend().next() {
        return s.clone();
    }
    match prefetch {
        Some(p) => format!("prefetch {p}"),
        None => "tuned".to_owned(),
    }
}

/// `ours enqueue: 6132 hand-SQL 8616 x0.71` or `graphile enq-batch500: 36487.1`.
fn enqueue_line(body: &str, load: &str, jobs: u64, rows: &mut Vec<Row>) {
    let Some((head, value)) = body.split_once(": ") else {
        return;
    };
    let Some((sys, wl)) = head.split_once(' ') else {
        return;
    };
    let row = |system: &str, setting: &str, workload: &str, rate: &str| Row {
        system: system.to_owned(),
        setting: setting.to_owned(),
        backend: "postgres".to_owned(),
        workload: workload.to_owned(),
        jobs,
        rep: 1,
        jobs_per_sec: rate.to_owned(),
        load: load.to_owned(),
    };
    if sys == "ours" && (wl == "enqueue" || wl == "enqueue-batch") {
        let w: Vec<&str> = value.split_whitespace().collect();
        let (ours, hand) = match w.as_slice() {
            [o, "hand-SQL", h, ..] => (*o, *h),
            _ => (FAILED, FAILED),
        };
        let hand_setting = if wl == "enqueue" {
            "one INSERT per job"
        } else {
            "one INSERT per 500 jobs"
        };
        rows.push(row("dbqueue", "defaults", wl, &figure(ours)));
        rows.push(row(HAND_SQL, hand_setting, wl, &figure(hand)));
        return;
    }
    let workload = match wl {
        "enq" => "enqueue",
        "enq-batch500" => "enqueue-batch",
        _ => return,
    };
    if let Some(name) = peer(sys) {
        rows.push(row(name, "defaults", workload, &figure(value)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
npm ci failed
rep 1 ours drain (N=100000): drain (prefetch auto): ours 20857 hand-SQL 31612 x0.66 drain (prefetch 1): ours 2367 hand-SQL 2808 x0.84 (load 2.72)
rep 1 ourstuned drain (N=100000): drain (prefetch 500): ours 39109 hand-SQL 52000 x0.75 drain (prefetch 1): ours 2400 hand-SQL 2700 x0.89 (load 3.01)
rep 1 graphile drain (N=100000): 18265.933870034936 (load 4.34)
rep 1 pgqueuer drain (N=100000): failed, see /tmp/peers.x/out (load 3.99)
ours enqueue: 6132 hand-SQL 8616 x0.71 (load 1.88)
ours enqueue-batch: 141417 hand-SQL 149047 x0.95 (load 2.37)
graphile enq: 607.5649589000586 (load 2.37)
obanpy enq-batch500: failed (load 2.77)
summary: /tmp/peers.x/out/summary.txt
rep 2 sqlite default (N=100000): drain (prefetch auto): ours 21253 hand-SQL 113028 x0.19 (load 0.35)
rep 2 sqlite tuned (N=100000): drain (prefetch 500): ours 13297 hand-SQL 171564 x0.08 (load 0.40)
";

    #[test]
    fn a_sittings_lines_become_rows_with_their_figures_as_printed() {
        let extra = Extra {
            tuned: vec![
                (
                    "postgres".into(),
                    1,
                    tuned_setting(
                        "qb --backend postgres --workload drain --jobs 100000 --batch 500 --url u --json",
                    ),
                ),
                ("sqlite".into(), 2, "prefetch 500".into()),
            ],
            enqueue_jobs: Some(2_000),
        };
        let (rows, other) = parse(LOG, &extra);
        assert_eq!(other, vec!["npm ci failed".to_owned()]);
        let (postgres, sqlite): (Vec<Row>, Vec<Row>) =
            rows.into_iter().partition(|r| r.backend == "postgres");
        let seen: Vec<(&str, &str, u32, &str)> = sqlite
            .iter()
            .map(|r| {
                (
                    r.system.as_str(),
                    r.setting.as_str(),
                    r.rep,
                    r.jobs_per_sec.as_str(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                ("dbqueue", "worker defaults", 2, "21253"),
                (HAND_SQL, "claims of 100", 2, "113028"),
                ("dbqueue", "prefetch 500", 2, "13297"),
                (HAND_SQL, "claims of 500", 2, "171564"),
            ]
        );
        let rows = postgres;
        let seen: Vec<(&str, &str, &str, u64, &str, &str)> = rows
            .iter()
            .map(|r| {
                (
                    r.system.as_str(),
                    r.setting.as_str(),
                    r.workload.as_str(),
                    r.jobs,
                    r.jobs_per_sec.as_str(),
                    r.load.as_str(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    "dbqueue",
                    "worker defaults",
                    "drain",
                    100_000,
                    "20857",
                    "2.72"
                ),
                (HAND_SQL, "claims of 100", "drain", 100_000, "31612", "2.72"),
                (
                    "dbqueue",
                    "prefetch 1",
                    "drain-prefetch-1",
                    100_000,
                    "2367",
                    "2.72"
                ),
                (
                    HAND_SQL,
                    "claims of 1",
                    "drain-prefetch-1",
                    100_000,
                    "2808",
                    "2.72"
                ),
                ("dbqueue", "prefetch 500", "drain", 100_000, "39109", "3.01"),
                (HAND_SQL, "claims of 500", "drain", 100_000, "52000", "3.01"),
                (
                    "Graphile Worker",
                    "best configuration",
                    "drain",
                    100_000,
                    "18265.933870034936",
                    "4.34"
                ),
                (
                    "PgQueuer",
                    "best configuration",
                    "drain",
                    100_000,
                    FAILED,
                    "3.99"
                ),
                ("dbqueue", "defaults", "enqueue", 2_000, "6132", "1.88"),
                (
                    HAND_SQL,
                    "one INSERT per job",
                    "enqueue",
                    2_000,
                    "8616",
                    "1.88"
                ),
                (
                    "dbqueue",
                    "defaults",
                    "enqueue-batch",
                    2_000,
                    "141417",
                    "2.37"
                ),
                (
                    HAND_SQL,
                    "one INSERT per 500 jobs",
                    "enqueue-batch",
                    2_000,
                    "149047",
                    "2.37"
                ),
                (
                    "Graphile Worker",
                    "defaults",
                    "enqueue",
                    2_000,
                    "607.5649589000586",
                    "2.37"
                ),
                (
                    "Oban for Python",
                    "defaults",
                    "enqueue-batch",
                    2_000,
                    FAILED,
                    "2.77"
                ),
            ]
        );
    }

    #[test]
    fn an_output_folder_gives_the_tuned_options_and_the_enqueues_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        let command = |c: &str| format!("{{\"command\": \"qb {c} --url u --json\"}}");
        write(
            "ourstuned-drain-2.json",
            &command("--backend postgres --workload drain --jobs 9 --batch 300"),
        );
        write("ourstuned-drain-2.err", "the table, not JSON");
        write("ourstuned-drain-3.json", "");
        write(
            "out-mysql-tuned-1.json",
            &command("--backend mysql --workload drain --jobs 9 --discard-completed"),
        );
        write(
            "ours-enqueue.json",
            &command("--backend postgres --workload enqueue --jobs 2000"),
        );
        let mut extra = Extra::from_dir(dir.path()).unwrap();
        extra.tuned.sort();
        assert_eq!(
            extra.tuned,
            vec![
                ("mysql".into(), 1, "completed jobs deleted".into()),
                ("postgres".into(), 2, "prefetch 300".into()),
            ]
        );
        assert_eq!(extra.enqueue_jobs, Some(2000));
    }

    #[test]
    fn tuned_settings_name_what_differs_from_the_sittings_own_options() {
        let base = "/x/queue-bench --backend postgres --workload drain --jobs 20000";
        assert_eq!(
            tuned_setting(&format!("{base} --batch 500 --url u --json")),
            "prefetch 500"
        );
        assert_eq!(
            tuned_setting(&format!(
                "{base} --batch 500 --discard-completed --url u --json"
            )),
            "prefetch 500, completed jobs deleted"
        );
        assert_eq!(
            tuned_setting(&format!("{base} --workers 32 --url u --json")),
            "--workers 32"
        );
        assert_eq!(
            tuned_setting(&format!("{base} --url u --json")),
            "worker defaults"
        );
        assert_eq!(
            tuned_setting(&format!(
                "{base} --batch 500 --url u --json --no-single-drain"
            )),
            "prefetch 500"
        );
        assert_eq!(option(base, "--jobs"), Some("20000"));
    }
}
