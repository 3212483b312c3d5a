//! The drain by several worker processes against one database: the program re-executes itself
//! as workers (`--child-drain NAMESPACE`), each a worker runtime with the same slots and
//! prefetch, while the parent seeds the jobs, starts them all at once, watches the table until
//! every job is completed, stops them and checks the counts.
//!
//! Parent and children talk over the children's stdin and stdout, one line at a time:
//! the child says `ready` once connected, the parent says `go`, later `stop` (or closes stdin),
//! and the child answers with `done` and its counters.

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use queue_core::worker::{JobContext, JobError, Worker};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::backend::{BackendKind, OursNs, Server};
use crate::workload::{Measurement, Outcome, Prefetch, Settings};

/// The queue name every workload uses (the same as the in-process workloads').
const QUEUE: &str = "bench";

/// What a child reports when it stops.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct ChildCounts {
    /// Handler calls.
    handled: u64,
    /// Jobs the worker completed.
    completed: u64,
    /// Retries, dead jobs, lost leases, abandoned jobs and pop errors: none expected.
    unexpected: u64,
}

impl ChildCounts {
    fn line(&self) -> String {
        format!(
            "done {} {} {}",
            self.handled, self.completed, self.unexpected
        )
    }

    fn parse(line: &str) -> Result<Self> {
        let mut it = line.split_whitespace();
        if it.next() != Some("done") {
            bail!("a worker process answered {line:?} instead of its counters");
        }
        let mut next = || -> Result<u64> {
            it.next()
                .context("a worker process's counters line is short")?
                .parse()
                .context("a worker process's counter is not a number")
        };
        Ok(ChildCounts {
            handled: next()?,
            completed: next()?,
            unexpected: next()?,
        })
    }
}

/// The child's side: attaches to `namespace`, waits for `go`, drains until `stop`, reports.
pub(crate) async fn child(
    server: &dyn Server,
    namespace: &str,
    workers: usize,
    batch: Prefetch,
) -> Result<()> {
    let queue = server
        .attach(namespace, (workers + 2) as u32)
        .await
        .context("attach to the namespace")?;
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    say(&mut stdout, "ready").await?;
    match stdin.next_line().await? {
        Some(l) if l.trim() == "go" => {}
        other => bail!("expected `go`, got {other:?}"),
    }
    let handled = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    let handle = batch
        .apply(
            Worker::builder(queue, QUEUE)
                .retention(queue_core::Retention::off())
                .concurrency(workers),
        )
        .handler_fn(move |_ctx: JobContext| {
            h.fetch_add(1, Ordering::Relaxed);
            async { Ok::<(), JobError>(()) }
        })
        .build()?
        .start();
    // `stop` or end of input (the parent went away) ends the drain.
    while let Some(l) = stdin.next_line().await? {
        if l.trim() == "stop" {
            break;
        }
    }
    let counters = handle.counters();
    handle.shutdown(Duration::from_secs(10)).await;
    let snap = counters.snapshot();
    let counts = ChildCounts {
        handled: handled.load(Ordering::Relaxed),
        completed: snap.completed,
        unexpected: snap.retried + snap.dead + snap.lease_lost + snap.abandoned + snap.pop_errors,
    };
    say(&mut stdout, &counts.line()).await
}

async fn say(out: &mut tokio::io::Stdout, line: &str) -> Result<()> {
    out.write_all(format!("{line}\n").as_bytes()).await?;
    out.flush().await?;
    Ok(())
}

struct Proc {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Proc {
    async fn tell(&mut self, line: &str) -> Result<()> {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .context("write to a worker process")?;
        self.stdin.flush().await?;
        Ok(())
    }

    async fn hear(&mut self) -> Result<String> {
        match self.stdout.next_line().await? {
            Some(l) => Ok(l),
            None => bail!("a worker process ended early (its errors are above)"),
        }
    }
}

fn spawn(
    kind: BackendKind,
    url: Option<&str>,
    namespace: &str,
    s: &Settings,
    batch: Prefetch,
) -> Result<Proc> {
    let exe = std::env::current_exe().context("find this program to start worker processes")?;
    let mut cmd = Command::new(exe);
    cmd.arg("--backend")
        .arg(kind.name())
        .arg("--child-drain")
        .arg(namespace)
        .arg("--workers")
        .arg(s.workers.to_string());
    if let Prefetch::Max(n) = batch {
        cmd.arg("--batch").arg(n.to_string());
    }
    if let Some(url) = url {
        cmd.arg("--url").arg(url);
    }
    if !crate::backend::keep_completed() {
        cmd.arg("--discard-completed");
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd.spawn().context("start a worker process")?;
    let stdin = child.stdin.take().context("worker process stdin")?;
    let stdout = child.stdout.take().context("worker process stdout")?;
    Ok(Proc {
        child,
        stdin,
        stdout: BufReader::new(stdout).lines(),
    })
}

/// The parent's side: `processes` worker processes drain `s.jobs` jobs seeded into `ns`.
pub(crate) async fn drain(
    server: &dyn Server,
    url: Option<&str>,
    ns: &dyn OursNs,
    s: &Settings,
    batch: Prefetch,
    processes: usize,
) -> Outcome {
    let payload = s.payload();
    crate::workload::seed_ours(ns.queue().as_ref(), s.jobs, &payload)
        .await
        .context("seed the jobs")?;
    let namespace = ns.namespace();
    let mut procs = Vec::with_capacity(processes);
    for _ in 0..processes {
        procs.push(spawn(server.kind(), url, &namespace, s, batch)?);
    }
    for p in &mut procs {
        let l = p.hear().await?;
        if l.trim() != "ready" {
            bail!("a worker process said {l:?} instead of `ready`");
        }
    }
    let start = Instant::now();
    for p in &mut procs {
        p.tell("go").await?;
    }
    let limit = Duration::from_secs(s.workload_timeout_secs());
    let mut last = ns.check(QUEUE).await?;
    while last.completed < s.jobs {
        if start.elapsed() > limit {
            bail!(
                "{processes} worker processes completed {} of {} jobs in {:?}",
                last.completed,
                s.jobs,
                start.elapsed()
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        last = ns.check(QUEUE).await?;
    }
    let elapsed = start.elapsed();
    let mut total = ChildCounts::default();
    for p in &mut procs {
        p.tell("stop").await?;
    }
    for p in &mut procs {
        let c = ChildCounts::parse(&p.hear().await?)?;
        total.handled += c.handled;
        total.completed += c.completed;
        total.unexpected += c.unexpected;
        p.child.wait().await.context("wait for a worker process")?;
    }
    let mut violations = ns
        .check(QUEUE)
        .await?
        .violations(crate::backend::kept_after_completion(s.jobs));
    if total.handled != s.jobs {
        violations.push(format!(
            "the handlers ran {} times for {} jobs",
            total.handled, s.jobs
        ));
    }
    if total.completed != s.jobs {
        violations.push(format!(
            "the workers counted {} completed, expected {}",
            total.completed, s.jobs
        ));
    }
    if total.unexpected != 0 {
        violations.push(format!(
            "{} unexpected worker outcomes (retries, dead, lost leases, pop errors)",
            total.unexpected
        ));
    }
    Ok((
        Measurement::new(
            format!(
                "{processes} worker processes x {} slots, prefetch {batch}, no-op handler",
                s.workers
            ),
            s.jobs,
            elapsed,
        ),
        violations,
        vec![format!(
            "completion watched by counting the table every 5 ms; no baseline (compare with the one-process drain)"
        )],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_line_round_trips() {
        let c = ChildCounts {
            handled: 7,
            completed: 6,
            unexpected: 1,
        };
        assert_eq!(ChildCounts::parse(&c.line()).unwrap(), c);
        assert!(ChildCounts::parse("ready").is_err());
        assert!(ChildCounts::parse("done 1 2").is_err());
    }
}
