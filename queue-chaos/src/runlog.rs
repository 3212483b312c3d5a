//! The run log: every worker process appends one JSON line per event of each execution (its
//! start, every lease extension it sees, its end) to a file of its own, with one `write` per
//! line, so a process killed with SIGKILL loses nothing it had logged.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum What {
    /// The handler started; `exp` is the lease's expiry at that moment.
    Start,
    /// The handler saw its lease extended to `exp`.
    Extend,
    /// The handler ended with `outcome`; `exp` is the last expiry it knew.
    End,
}

/// How an execution ended, as its handler saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ended {
    /// The effect and the completion committed together.
    Completed,
    /// The handler failed the job on purpose (the plan said so).
    Failed,
    /// The completion was refused: the lease was lost or the job cancelled.
    LeaseLost,
    /// The completion failed on a database error (rolled back, or unknown at a lost commit).
    Error,
}

/// One line of the run log.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Event {
    pub(crate) what: What,
    pub(crate) job: Uuid,
    pub(crate) token: Uuid,
    pub(crate) attempt: u32,
    pub(crate) process: String,
    /// When, in microseconds since the epoch.
    pub(crate) t: i64,
    /// The lease's expiry known at that moment, in microseconds since the epoch.
    pub(crate) exp: i64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) outcome: Option<Ended>,
    /// On a start, with `--db-clock`: the database's clock read by the handler as it started
    /// (microseconds since the epoch), the clock the jobs' `finished_at` are on.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) db_t: Option<i64>,
}

/// The run log of one process.
pub(crate) struct RunLog {
    file: Mutex<File>,
}

impl RunLog {
    pub(crate) fn create(path: &Path) -> std::io::Result<RunLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(RunLog {
            file: Mutex::new(file),
        })
    }

    pub(crate) fn write(&self, event: &Event) {
        let mut line = serde_json::to_vec(event).unwrap_or_default();
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // One write per line; a failed write is reported by the missing line at verification.
        let _ = file.write_all(&line);
    }
}

/// Reads every run log in `dir`. A line cut short by a kill is skipped.
pub(crate) fn read_all(dir: &Path) -> std::io::Result<Vec<Event>> {
    let mut events = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            for line in BufReader::new(File::open(&path)?).lines() {
                if let Ok(event) = serde_json::from_str::<Event>(&line?) {
                    events.push(event);
                }
            }
        }
    }
    Ok(events)
}
