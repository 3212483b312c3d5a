//! Child processes as the scenarios see them: start, read their control lines, signal them
//! (SIGKILL, SIGSTOP, SIGCONT, SIGTERM), and collect their reports.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use rustix::process::{kill_process, Pid, Signal};

use crate::child::{HolderResult, WorkerReport};

/// What a child said on its standard output so far.
#[derive(Default)]
pub(crate) struct Heard {
    pub(crate) ready: AtomicBool,
    /// Completion transactions open right now.
    pub(crate) in_tx: AtomicI64,
    pub(crate) claimed: Mutex<Option<usize>>,
    pub(crate) report: Mutex<Option<WorkerReport>>,
    pub(crate) result: Mutex<Option<HolderResult>>,
}

/// A running child process.
pub(crate) struct Proc {
    pub(crate) name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    pub(crate) heard: Arc<Heard>,
    /// The thread reading the child's standard output; it ends at the child's exit.
    reader: std::thread::JoinHandle<()>,
}

impl Proc {
    /// Starts this program again with `args`; standard error goes to `stderr_path`.
    pub(crate) fn spawn(name: &str, args: &[String], stderr_path: &Path) -> anyhow::Result<Proc> {
        let exe = std::env::current_exe().context("locating this program")?;
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(stderr_path)?;
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let heard = Arc::new(Heard::default());
        let stdout = child.stdout.take().context("child stdout")?;
        let h = heard.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match line.as_str() {
                    "READY" => h.ready.store(true, Ordering::SeqCst),
                    "TX+" => {
                        h.in_tx.fetch_add(1, Ordering::SeqCst);
                    }
                    "TX-" => {
                        h.in_tx.fetch_sub(1, Ordering::SeqCst);
                    }
                    other => {
                        if let Some(n) = other.strip_prefix("CLAIMED ") {
                            *h.claimed.lock().unwrap_or_else(|e| e.into_inner()) = n.parse().ok();
                            h.ready.store(true, Ordering::SeqCst);
                        } else if let Some(json) = other.strip_prefix("REPORT ") {
                            *h.report.lock().unwrap_or_else(|e| e.into_inner()) =
                                serde_json::from_str(json).ok();
                        } else if let Some(json) = other.strip_prefix("RESULT ") {
                            *h.result.lock().unwrap_or_else(|e| e.into_inner()) =
                                serde_json::from_str(json).ok();
                        }
                    }
                }
            }
        });
        let stdin = child.stdin.take();
        Ok(Proc {
            name: name.to_owned(),
            child,
            stdin,
            heard,
            reader,
        })
    }

    fn pid(&self) -> Pid {
        Pid::from_child(&self.child)
    }

    /// Sends `signal`.
    pub(crate) fn signal(&self, signal: Signal) -> anyhow::Result<()> {
        kill_process(self.pid(), signal).with_context(|| format!("signalling {}", self.name))
    }

    /// Waits until the child said READY (or CLAIMED), or fails when it exits first.
    pub(crate) async fn wait_ready(&mut self, within: Duration) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + within;
        while !self.heard.ready.load(Ordering::SeqCst) {
            if let Some(status) = self.child.try_wait()? {
                bail!("{} exited before it was ready ({status})", self.name);
            }
            if tokio::time::Instant::now() > deadline {
                bail!("{} was not ready within {within:?}", self.name);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    /// Whether a completion transaction of this child is open right now.
    pub(crate) fn in_tx(&self) -> bool {
        self.heard.in_tx.load(Ordering::SeqCst) > 0
    }

    /// SIGKILL, then reap.
    pub(crate) fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Writes a line to the child's standard input.
    pub(crate) fn tell(&mut self, line: &str) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("child stdin")?;
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        Ok(())
    }

    /// Waits for the child to exit by itself within `within`, then kills it.
    pub(crate) async fn wait_exit(&mut self, within: Duration) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait()? {
                if !status.success() {
                    bail!("{} exited with {status}", self.name);
                }
                // The reader thread ends once it has taken the last lines.
                let read_by = tokio::time::Instant::now() + Duration::from_secs(10);
                while !self.reader.is_finished() && tokio::time::Instant::now() < read_by {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                self.kill9();
                bail!("{} did not exit within {within:?}; killed", self.name);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// SIGTERM (a graceful shutdown), then waits for its report.
    pub(crate) async fn stop(&mut self, within: Duration) -> anyhow::Result<WorkerReport> {
        self.signal(Signal::TERM)?;
        self.wait_exit(within).await?;
        self.heard
            .report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .with_context(|| format!("{} exited without a report", self.name))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // A stopped child must be continued to die of anything but SIGKILL; SIGKILL is enough.
            self.kill9();
        }
    }
}
