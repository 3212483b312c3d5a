//! The results of a run: a text table for people, JSON for machines.

use std::fmt::Write as _;

use crate::backend::BackendKind;
use crate::machine::Machine;
use crate::workload::WorkloadResult;

/// Everything one invocation measured.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Report {
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) servers: Vec<ServerReport>,
}

/// The results on one server.
#[derive(Debug, serde::Serialize)]
pub(crate) struct ServerReport {
    pub(crate) backend: BackendKind,
    /// Version and durability settings.
    pub(crate) server: Vec<(String, String)>,
    pub(crate) results: Vec<WorkloadResult>,
    /// Workloads that failed and correctness violations; any entry fails the run.
    pub(crate) failures: Vec<String>,
}

impl ServerReport {
    pub(crate) fn new(backend: BackendKind) -> Self {
        ServerReport {
            backend,
            server: Vec::new(),
            results: Vec::new(),
            failures: Vec::new(),
        }
    }

    pub(crate) fn unreachable(backend: BackendKind, why: String) -> Self {
        let mut r = Self::new(backend);
        r.server.push(("unreachable".into(), why));
        r
    }
}

impl Report {
    pub(crate) fn new(machine: Machine) -> Self {
        Report {
            command: String::new(),
            machine,
            servers: Vec::new(),
        }
    }

    /// Whether every workload ran and every check held.
    pub(crate) fn ok(&self) -> bool {
        self.servers.iter().all(|s| s.failures.is_empty())
    }

    pub(crate) fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "machine: {}", self.machine.describe());
        for s in &self.servers {
            let _ = writeln!(out, "\n## {}", s.backend.name());
            for (k, v) in &s.server {
                let _ = writeln!(out, "  {k}: {v}");
            }
            let mut rows = vec![[
                "workload".to_string(),
                "dbqueue jobs/s".into(),
                "baseline jobs/s".into(),
                "ratio".into(),
                "baseline".into(),
            ]];
            for r in &s.results {
                if let Some(o) = &r.ours {
                    rows.push([
                        r.workload.clone(),
                        format!("{:.0}", o.rate()),
                        r.baseline
                            .as_ref()
                            .map(|b| format!("{:.0}", b.rate()))
                            .unwrap_or_else(|| "-".into()),
                        r.ratio
                            .map(|x| format!("{x:.2}"))
                            .unwrap_or_else(|| "-".into()),
                        r.baseline
                            .as_ref()
                            .map(|b| b.what.clone())
                            .unwrap_or_else(|| "-".into()),
                    ]);
                }
            }
            table(&mut out, &rows);
            for r in &s.results {
                for l in &r.latency {
                    let _ = writeln!(
                        out,
                        "  {}: {}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
                        r.workload, l.measured, l.p50_ms, l.p99_ms, l.max_ms, l.samples
                    );
                }
            }
            for r in &s.results {
                if let Some(o) = &r.ours {
                    let _ = writeln!(
                        out,
                        "  {}: dbqueue = {} ({} jobs in {:.2} s)",
                        r.workload, o.what, o.jobs, o.seconds
                    );
                }
                for n in &r.notes {
                    let _ = writeln!(out, "  {}: {n}", r.workload);
                }
            }
            if s.failures.is_empty() {
                let _ = writeln!(out, "  checks: all passed");
            } else {
                for f in &s.failures {
                    let _ = writeln!(out, "  FAILED: {f}");
                }
            }
        }
        out
    }
}

fn table(out: &mut String, rows: &[[String; 5]]) {
    let mut widths = [0usize; 5];
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    for (i, row) in rows.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {:<w0$} | {:>w1$} | {:>w2$} | {:>w3$} | {:<w4$} |",
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4]
        );
        if i == 0 {
            let _ = writeln!(
                out,
                "|{}|{}:|{}:|{}:|{}|",
                "-".repeat(widths[0] + 2),
                "-".repeat(widths[1] + 1),
                "-".repeat(widths[2] + 1),
                "-".repeat(widths[3] + 1),
                "-".repeat(widths[4] + 2)
            );
        }
    }
}
