//! What the workloads need from a database: fresh, isolated namespaces for our queue and for
//! the hand-written baseline, and a way to check the outcome in the database itself.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use async_trait::async_trait;
use clap::ValueEnum;
use queue_core::{Limits, Queue};

/// Whether the queues this process opens keep completed jobs (`--discard-completed` clears it).
pub(crate) static KEEP_COMPLETED: AtomicBool = AtomicBool::new(true);

/// [`KEEP_COMPLETED`], for the queue builders.
pub(crate) fn keep_completed() -> bool {
    KEEP_COMPLETED.load(Ordering::Relaxed)
}

/// The hours of the finished partitions PostgreSQL namespaces are migrated with
/// (`--finished-partitions`); 0: none.
pub(crate) static FINISHED_PARTITIONS: AtomicU32 = AtomicU32::new(0);

/// [`FINISHED_PARTITIONS`] as the builder's interval.
pub(crate) fn finished_partitions() -> Option<Duration> {
    match FINISHED_PARTITIONS.load(Ordering::Relaxed) {
        0 => None,
        hours => Some(Duration::from_secs(u64::from(hours) * 3600)),
    }
}

/// The database kinds the bench knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum BackendKind {
    Sqlite,
    Postgres,
    Mysql,
    Mssql,
}

impl BackendKind {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            BackendKind::Sqlite => "sqlite",
            BackendKind::Postgres => "postgres",
            BackendKind::Mysql => "mysql",
            BackendKind::Mssql => "mssql",
        }
    }

    /// The URL used when none is given (`None` for SQLite: a temporary directory; for SQL
    /// Server, `QUEUE_TEST_MSSQL_URL` when set, as no server runs here by default).
    pub(crate) fn default_url(&self) -> Option<String> {
        match self {
            BackendKind::Sqlite => None,
            BackendKind::Postgres => Some("postgres://postgres@127.0.0.1:5432/test".into()),
            BackendKind::Mysql => Some("mysql://root@127.0.0.1:3306/test".into()),
            BackendKind::Mssql => std::env::var("QUEUE_TEST_MSSQL_URL")
                .ok()
                .filter(|v| !v.trim().is_empty()),
        }
    }
}

/// Connects to the server (within a few seconds, or fails).
pub(crate) async fn connect(kind: BackendKind, url: Option<&str>) -> Result<Box<dyn Server>> {
    Ok(match kind {
        BackendKind::Sqlite => Box::new(crate::sqlite::SqliteServer::new(url)?),
        BackendKind::Postgres => {
            let Some(url) = url else {
                bail!("postgres needs --url")
            };
            Box::new(crate::pg::PgServer::connect(url).await?)
        }
        BackendKind::Mysql => {
            let Some(url) = url else {
                bail!("mysql needs --url")
            };
            Box::new(crate::mysql::MySqlServer::connect(url).await?)
        }
        BackendKind::Mssql => connect_mssql(url).await?,
    })
}

#[cfg(feature = "mssql")]
async fn connect_mssql(url: Option<&str>) -> Result<Box<dyn Server>> {
    let Some(url) = url else {
        bail!("mssql needs --url (or QUEUE_TEST_MSSQL_URL)")
    };
    crate::mssql::check_url(url)?;
    Ok(Box::new(crate::mssql::MsSqlServer::connect(url).await?))
}

#[cfg(not(feature = "mssql"))]
async fn connect_mssql(_url: Option<&str>) -> Result<Box<dyn Server>> {
    bail!("queue-bench was built without the `mssql` feature")
}

/// A unique, valid identifier fragment for one namespace of this process.
pub(crate) fn fresh_tag(prefix: &str) -> Result<String> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tag = format!(
        "{prefix}_{}_{n}_{:04x}",
        std::process::id(),
        fastrand::u16(..)
    );
    queue_core::validate::identifier("namespace", &tag)?;
    Ok(tag)
}

/// A day, the age of a filled backlog ([`OursNs::fill_finished`]).
pub(crate) const DAY: Duration = Duration::from_secs(24 * 3600);

/// One database server.
#[async_trait]
pub(crate) trait Server: Send + Sync {
    /// Which kind it is.
    fn kind(&self) -> BackendKind;
    /// Version and durability settings, as name/value pairs.
    async fn describe(&self) -> Result<Vec<(String, String)>>;
    /// A freshly migrated, isolated namespace for our queue, with `pool` connections.
    async fn ours(&self, pool: u32) -> Result<Box<dyn OursNs>>;
    /// A fresh, isolated baseline table, with `pool` connections.
    async fn baseline(&self, pool: u32) -> Result<Box<dyn BaselineNs>>;
    /// Our queue on a namespace that [`Server::ours`] made, possibly in another process.
    async fn attach(&self, namespace: &str, pool: u32) -> Result<Arc<dyn Queue>> {
        self.attach_with(namespace, pool, Limits::default()).await
    }
    /// [`Server::attach`] with other limits.
    async fn attach_with(
        &self,
        namespace: &str,
        pool: u32,
        limits: Limits,
    ) -> Result<Arc<dyn Queue>>;
}

/// Our queue in its own namespace, plus direct SQL access to check and seed its table.
#[async_trait]
pub(crate) trait OursNs: Send + Sync {
    /// The queue under test.
    fn queue(&self) -> Arc<dyn Queue>;
    /// What [`Server::attach`] needs to open the same queue (schema, table prefix or file).
    fn namespace(&self) -> String;
    /// Counts of the queue's rows, straight from the table.
    async fn check(&self, queue: &str) -> Result<DrainCheck>;
    /// Inserts `rows` completed jobs into `queue` with set-based SQL, then brings planner
    /// statistics up to date as the server's background maintenance would.
    async fn fill_finished(&self, queue: &str, rows: u64, payload: &str) -> Result<()>;
    /// Inserts `rows` completed jobs into `queue` that finished between `newest` and `newest +
    /// span` ago, spread evenly (each created, run and finished at that time): the history a
    /// retention round deletes from. Then brings planner statistics up to date as
    /// [`OursNs::fill_finished`] does. `false` where queue-bench has no such fill for the
    /// backend (nothing inserted).
    async fn fill_history(
        &self,
        _queue: &str,
        _rows: u64,
        _payload: &str,
        _newest: Duration,
        _span: Duration,
    ) -> Result<bool> {
        Ok(false)
    }
    /// Drops the namespace.
    async fn cleanup(&self) -> Result<()>;
    /// Holds back the server's cleanup of old row versions, as a long transaction of another
    /// client in the same database does (a report, a backup): a transaction that took a
    /// snapshot (PostgreSQL `REPEATABLE READ`; MySQL/MariaDB `WITH CONSISTENT SNAPSHOT`) and
    /// read a row of the queue's table, open until the returned hold is released. `None` where
    /// the database keeps no such horizon.
    async fn hold_horizon(&self) -> Result<Option<Box<dyn HeldHorizon>>> {
        Ok(None)
    }
}

/// A snapshot another client holds open ([`OursNs::hold_horizon`]).
#[async_trait]
pub(crate) trait HeldHorizon: Send {
    /// What the server's cleanup cannot remove while the snapshot is held, in words (it runs
    /// the cleanup first where that is a command).
    async fn unremovable(&mut self) -> Result<String>;
    /// Ends the snapshot's transaction.
    async fn release(self: Box<Self>) -> Result<()>;
}

/// The hand-written queue a team would write instead: a minimal table and plain SQL.
#[async_trait]
pub(crate) trait BaselineNs: Send + Sync {
    /// One INSERT of one job.
    async fn insert_one(&self, payload: &str) -> Result<()>;
    /// One multi-row INSERT of all payloads.
    async fn insert_many(&self, payloads: &[String]) -> Result<()>;
    /// Claims up to `limit` pending jobs (state running, attempts + 1); returns their ids.
    async fn claim(&self, limit: usize) -> Result<Vec<i64>>;
    /// Marks the claimed jobs done in one UPDATE.
    async fn complete(&self, ids: &[i64]) -> Result<()>;
    /// Counts of the table's rows.
    async fn check(&self) -> Result<DrainCheck>;
    /// Drops the table (or schema).
    async fn cleanup(&self) -> Result<()>;
}

/// How many rows `jobs` plain jobs leave in the table once completed: all of them, or none when
/// a completion deletes its job (`--discard-completed`; jobs of a workflow are kept either way).
/// Each job then ran exactly once if the handler ran `jobs` times and none is left.
pub(crate) fn kept_after_completion(jobs: u64) -> u64 {
    if keep_completed() {
        jobs
    } else {
        0
    }
}

/// Row counts read back from the database after a workload.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub(crate) struct DrainCheck {
    /// Rows in the queue.
    pub(crate) total: u64,
    /// Rows in the finished-successfully state.
    pub(crate) completed: u64,
    /// Finished rows whose attempts is not exactly 1.
    pub(crate) not_once: u64,
}

impl DrainCheck {
    /// The violations of "all `expected` jobs completed, each claimed exactly once".
    pub(crate) fn violations(&self, expected: u64) -> Vec<String> {
        let mut v = Vec::new();
        if self.total != expected {
            v.push(format!(
                "{} rows in the table, expected {expected}",
                self.total
            ));
        }
        if self.completed != expected {
            v.push(format!(
                "{} rows completed, expected {expected}",
                self.completed
            ));
        }
        if self.not_once != 0 {
            v.push(format!(
                "{} rows with attempts != 1 (claimed more than once or never)",
                self.not_once
            ));
        }
        v
    }

    /// Enqueue checks: exactly `expected` rows stored.
    pub(crate) fn count_violations(&self, expected: u64) -> Vec<String> {
        if self.total == expected {
            Vec::new()
        } else {
            vec![format!("{} rows stored, expected {expected}", self.total)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_drain_has_no_violations() {
        let c = DrainCheck {
            total: 10,
            completed: 10,
            not_once: 0,
        };
        assert!(c.violations(10).is_empty());
    }

    #[test]
    fn double_claims_and_missing_jobs_are_violations() {
        let c = DrainCheck {
            total: 10,
            completed: 9,
            not_once: 2,
        };
        let v = c.violations(10);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(c.count_violations(11).len(), 1);
    }

    #[test]
    fn namespaces_are_fresh_valid_identifiers() {
        let a = fresh_tag("bench_q").unwrap();
        let b = fresh_tag("bench_q").unwrap();
        assert_ne!(a, b);
        assert!(queue_core::validate::identifier("t", &a).is_ok());
    }
}
