//! The recorded results: one measurement per line of a tab-separated file
//! (`queue-bench/results/sitting/README.md` describes it).

use anyhow::{bail, Context, Result};

/// The columns of a results file, in order.
pub(crate) const COLUMNS: [&str; 8] = [
    "system",
    "setting",
    "backend",
    "workload",
    "jobs",
    "rep",
    "jobs_per_sec",
    "load",
];

/// What a failed measurement records in `jobs_per_sec`.
pub(crate) const FAILED: &str = "failed";

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    /// The job queue measured, as the tables name it (`dbqueue`, `Graphile Worker`, ...).
    pub(crate) system: String,
    /// How it was configured (`worker defaults`, `prefetch 500`, `best configuration`, ...).
    pub(crate) setting: String,
    /// The database: `postgres`, `sqlite` or `mysql`.
    pub(crate) backend: String,
    /// `drain`, `drain-prefetch-1`, `enqueue` or `enqueue-batch`.
    pub(crate) workload: String,
    /// Jobs in the workload.
    pub(crate) jobs: u64,
    /// The rep of the sitting it was measured in.
    pub(crate) rep: u32,
    /// Jobs per second exactly as the run printed it, or [`FAILED`].
    pub(crate) jobs_per_sec: String,
    /// The 1-minute load average when the measurement started, as printed.
    pub(crate) load: String,
}

impl Row {
    /// The rate, or `None` for a failed measurement.
    pub(crate) fn rate(&self) -> Option<f64> {
        self.jobs_per_sec.parse().ok()
    }

    /// The load average as a number, when it is one.
    pub(crate) fn load(&self) -> Option<f64> {
        self.load.parse().ok()
    }

    /// What the tables and charts group measurements by.
    pub(crate) fn config(&self) -> (&str, &str) {
        (&self.system, &self.setting)
    }
}

/// Reads a results file: comment lines (`#`) and blank lines anywhere, then a header naming
/// [`COLUMNS`], then one row per line.
pub(crate) fn parse(text: &str) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let mut header = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        if !header {
            if fields != COLUMNS {
                bail!(
                    "line {n}: expected the header {:?}, found {fields:?}",
                    COLUMNS.join("\t")
                );
            }
            header = true;
            continue;
        }
        if fields.len() != COLUMNS.len() {
            bail!(
                "line {n}: {} fields, expected {}",
                fields.len(),
                COLUMNS.len()
            );
        }
        let row = Row {
            system: fields[0].to_owned(),
            setting: fields[1].to_owned(),
            backend: fields[2].to_owned(),
            workload: fields[3].to_owned(),
            jobs: fields[4]
                .parse()
                .with_context(|| format!("line {n}: jobs {:?}", fields[4]))?,
            rep: fields[5]
                .parse()
                .with_context(|| format!("line {n}: rep {:?}", fields[5]))?,
            jobs_per_sec: fields[6].to_owned(),
            load: fields[7].to_owned(),
        };
        if row.jobs_per_sec != FAILED && row.rate().is_none() {
            bail!(
                "line {n}: jobs_per_sec {:?} is neither a number nor {FAILED:?}",
                row.jobs_per_sec
            );
        }
        rows.push(row);
    }
    if !header {
        bail!("no header line");
    }
    Ok(rows)
}

/// Writes rows as a results file, after `comments` (each becomes a `#` line).
pub(crate) fn write(comments: &[String], rows: &[Row]) -> String {
    let mut out = String::new();
    for c in comments {
        out.push_str("# ");
        out.push_str(c);
        out.push('\n');
    }
    out.push_str(&COLUMNS.join("\t"));
    out.push('\n');
    for r in rows {
        let jobs = r.jobs.to_string();
        let rep = r.rep.to_string();
        let fields = [
            r.system.as_str(),
            &r.setting,
            &r.backend,
            &r.workload,
            &jobs,
            &rep,
            &r.jobs_per_sec,
            &r.load,
        ];
        out.push_str(&fields.join("\t"));
        out.push('\n');
    }
    out
}

/// The median, the least and the most of a configuration's measurements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spread {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    /// How many measurements (failed ones not counted).
    pub(crate) runs: usize,
}

impl Spread {
    /// `None` when there is no value.
    pub(crate) fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n == 0 {
            return None;
        }
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            runs: n,
        })
    }
}

/// The rows of one workload on one backend at one size, by configuration in the order of
/// their first row.
pub(crate) fn by_config<'a>(
    rows: &'a [Row],
    backend: &str,
    workload: &str,
    jobs: u64,
) -> Vec<((&'a str, &'a str), Vec<&'a Row>)> {
    let mut out: Vec<((&str, &str), Vec<&Row>)> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.backend == backend && r.workload == workload && r.jobs == jobs)
    {
        match out.iter_mut().find(|(c, _)| *c == r.config()) {
            Some((_, v)) => v.push(r),
            None => out.push((r.config(), vec![r])),
        }
    }
    out
}

/// The rates of some rows (failed ones left out).
pub(crate) fn rates(rows: &[&Row]) -> Vec<f64> {
    rows.iter().filter_map(|r| r.rate()).collect()
}

/// The sizes a workload was run at on a backend, smallest first.
pub(crate) fn sizes(rows: &[Row], backend: &str, workload: &str) -> Vec<u64> {
    let mut n: Vec<u64> = rows
        .iter()
        .filter(|r| r.backend == backend && r.workload == workload)
        .map(|r| r.jobs)
        .collect();
    n.sort_unstable();
    n.dedup();
    n
}

/// Where a system stands in the tables and charts: dbqueue first, the hand-written SQL last,
/// the other queues between them in the order they were measured.
pub(crate) fn rank(system: &str) -> u8 {
    if system == "dbqueue" {
        0
    } else if system.starts_with("hand-written SQL") {
        2
    } else {
        1
    }
}

/// A backend's name as people write it.
pub(crate) fn backend_name(backend: &str) -> &str {
    match backend {
        "postgres" => "PostgreSQL",
        "sqlite" => "SQLite",
        "mysql" => "MariaDB",
        "mssql" => "SQL Server",
        other => other,
    }
}

/// A whole number with thousands separators: 20857.4 is "20,857".
pub(crate) fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < -0.5 {
        out.insert(0, '-');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# a comment\n\
        system\tsetting\tbackend\tworkload\tjobs\trep\tjobs_per_sec\tload\n\
        dbqueue\tworker defaults\tpostgres\tdrain\t100\t1\t20857\t2.72\n\
        \n\
        Graphile Worker\tbest configuration\tpostgres\tdrain\t100\t1\t18265.933870034936\t4.34\n\
        dbqueue\tworker defaults\tpostgres\tdrain\t100\t2\tfailed\t3.1\n";

    #[test]
    fn a_results_file_reads_back_as_written() {
        let rows = parse(FILE).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].jobs_per_sec, "18265.933870034936");
        assert_eq!(rows[1].rate(), Some(18265.933870034936));
        assert_eq!(rows[2].rate(), None);
        let again = parse(&write(&["a comment".into()], &rows)).unwrap();
        assert_eq!(again, rows);
    }

    #[test]
    fn a_wrong_header_or_rate_is_refused() {
        assert!(parse("system\tjobs\n").is_err());
        assert!(parse("").is_err());
        let bad = FILE.replace("20857", "fast");
        assert!(parse(&bad).is_err());
        let short = FILE.replace("\t2.72", "");
        assert!(parse(&short).is_err());
    }

    #[test]
    fn spreads_and_groups() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.runs), (2.0, 1.0, 3.0, 3));
        assert_eq!(Spread::of(&[4.0, 1.0]).unwrap().median, 2.5);
        assert_eq!(Spread::of(&[]), None);
        let rows = parse(FILE).unwrap();
        let g = by_config(&rows, "postgres", "drain", 100);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].0, ("dbqueue", "worker defaults"));
        assert_eq!(rates(&g[0].1), vec![20857.0]);
        assert_eq!(sizes(&rows, "postgres", "drain"), vec![100]);
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(20857.4), "20,857");
        assert_eq!(thousands(999.6), "1,000");
        assert_eq!(thousands(1234567.0), "1,234,567");
        assert_eq!(thousands(12.0), "12");
    }
}
