//! [`SqliteQueueBuilder`]: where the database file is and how to use it.

use std::str::FromStr;
use std::time::Duration;

use queue_core::engine::{CommonOptions, RemoteWakeups, SLOW_STATEMENT};
use queue_core::{
    validate::redact_url, Capabilities, ClaimStrategy, Dialect, Engine, Error, Result, Wakeups,
};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::ConnectOptions;

use crate::driver::SqliteDriver;
use crate::queue::SqliteQueue;
use crate::sql::Statements;
use crate::LOG_TARGET;

/// Read connections unless set otherwise (writes always use one connection).
const DEFAULT_MAX_CONNECTIONS: u32 = 4;

/// Configures and opens a [`SqliteQueue`]. Start with [`SqliteQueue::builder`].
///
/// Claim strategies: [`ClaimStrategy::WriteLock`] (the default: one `UPDATE ... RETURNING` under
/// the database's write lock) or [`ClaimStrategy::Optimistic`] (read candidates, then claim each
/// with a version-guarded update). [`ClaimStrategy::SkipLocked`] does not exist in SQLite and
/// makes [`connect`](Self::connect) fail with [`Error::InvalidInput`]. `max_connections` counts
/// the read-only connections (for `get`, `list`, `stats` and optimistic candidates; default 4):
/// writes always go through one connection, because SQLite allows one writer at a time.
#[derive(Clone, Debug)]
pub struct SqliteQueueBuilder {
    target: String,
    common: CommonOptions,
    busy_timeout: Duration,
    synchronous_full: bool,
}

impl SqliteQueueBuilder {
    pub(crate) fn new(target: impl Into<String>) -> Self {
        SqliteQueueBuilder {
            target: target.into(),
            common: CommonOptions::default(),
            busy_timeout: Duration::from_secs(5),
            synchronous_full: false,
        }
    }

    queue_core::common_builder_methods!();

    /// How long a write waits for another process to release the database's write lock before
    /// [`Error::Unavailable`] (`PRAGMA busy_timeout`); default 5 s.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// `PRAGMA synchronous = FULL` instead of the default `NORMAL`: every commit is fsynced, so
    /// the last transactions survive a power loss too, at the cost of one fsync per commit.
    /// With `NORMAL` (and WAL) commits survive process crashes but the most recent ones may be
    /// lost if the machine loses power.
    pub fn synchronous_full(mut self, full: bool) -> Self {
        self.synchronous_full = full;
        self
    }

    /// The connect options for the target: a `sqlite:` URL or a plain file path.
    fn options(&self) -> Result<(SqliteConnectOptions, bool)> {
        let t = self.target.trim();
        if t.is_empty() {
            return Err(Error::invalid("url", "must name a database file"));
        }
        // The scheme is case-insensitive; sqlx expects it in lowercase.
        if let Some(rest) = t
            .get(..7)
            .filter(|scheme| scheme.eq_ignore_ascii_case("sqlite:"))
            .map(|_| &t[7..])
        {
            let memory = rest.contains(":memory:") || rest.contains("mode=memory");
            let opts = SqliteConnectOptions::from_str(&format!("sqlite:{rest}"))
                .map_err(|e| Error::invalid("url", format!("is not a valid sqlite URL ({e})")))?;
            return Ok((opts, memory));
        }
        if let Some((scheme, _)) = t.split_once("://") {
            return Err(Error::invalid(
                "url",
                format!("scheme {scheme:?} is not sqlite (expected sqlite://path or a file path)"),
            ));
        }
        // SQLite's own name for a private in-memory database, without the URL scheme.
        let memory = t == ":memory:";
        Ok((SqliteConnectOptions::new().filename(t), memory))
    }

    /// Opens the database file (creating it when missing), switches it to WAL and starts the
    /// writer connection and the read-only pool. Does not migrate; call
    /// [`SqliteQueue::migrate`](queue_core::Queue::migrate).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad setting or URL; [`Error::Unavailable`] when the file
    /// cannot be opened or created (e.g. its directory does not exist) within the connect
    /// timeout.
    pub async fn connect(self) -> Result<SqliteQueue> {
        let claim = self.common.validate(
            "SQLite",
            &[ClaimStrategy::WriteLock, ClaimStrategy::Optimistic],
        )?;
        if self.busy_timeout > Duration::from_secs(3600) {
            return Err(Error::invalid("busy_timeout", "must be at most 1 hour"));
        }
        let connect_timeout = self.common.connect_timeout;
        let (base, memory) = self.options()?;
        let base = base
            .log_slow_statements(log::LevelFilter::Debug, SLOW_STATEMENT)
            .busy_timeout(self.busy_timeout)
            .synchronous(if self.synchronous_full {
                SqliteSynchronous::Full
            } else {
                SqliteSynchronous::Normal
            });
        let writer_opts = base
            .clone()
            .create_if_missing(true)
            .journal_mode(if memory {
                SqliteJournalMode::Memory
            } else {
                SqliteJournalMode::Wal
            });
        // An embedded connection cannot be dropped by a peer, so the pool's ping before every
        // acquire (`test_before_acquire`) would only add a round trip to each call.
        // Waiting for the writer connection includes waiting for the writes queued before this
        // one, so it gets the busy timeout on top of the connect timeout.
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .test_before_acquire(false)
            .acquire_slow_level(log::LevelFilter::Debug)
            .acquire_timeout(connect_timeout + self.busy_timeout)
            .after_release(|conn, _| Box::pin(settle_transaction(conn)))
            .connect_lazy_with(writer_opts);
        let opened = tokio::time::timeout(connect_timeout, writer.acquire()).await;
        match opened {
            Ok(Ok(conn)) => drop(conn),
            Ok(Err(e)) => return Err(unavailable_or_database(e)),
            Err(_) => {
                return Err(Error::unavailable(format!(
                    "could not open {} within {:?}",
                    redact_url(&self.target),
                    connect_timeout
                )))
            }
        }
        // An in-memory database exists only inside its connections, so readers share the writer.
        let reader = if memory {
            writer.clone()
        } else {
            SqlitePoolOptions::new()
                .max_connections(
                    self.common
                        .max_connections
                        .unwrap_or(DEFAULT_MAX_CONNECTIONS),
                )
                .test_before_acquire(false)
                .acquire_slow_level(log::LevelFilter::Debug)
                .acquire_timeout(connect_timeout)
                .connect_lazy_with(base.read_only(true))
        };
        let sql = Statements::new(&[]);
        let version: String = sqlx::query_scalar(sql.server_version.clone())
            .fetch_one(&writer)
            .await
            .map_err(unavailable_or_database)?;
        tracing::debug!(
            target: LOG_TARGET,
            database = %redact_url(&self.target),
            sqlite_version = %version,
            claim = claim.as_str(),
            "connected"
        );
        let caps = Capabilities {
            dialect: Dialect::Sqlite,
            claim,
            wakeups: Wakeups::InProcess,
            time_precision: Duration::from_micros(1),
            transactions: true,
            server_version: Some(version),
            profile: queue_core::EngineProfile::of(queue_core::ServerKind::Sqlite),
            limits: self.common.limits.clone(),
        };
        let driver = SqliteDriver {
            pushes: crate::coalesce::Coalescer::new(writer.clone(), sql.job_insert.clone()),
            writer,
            reader,
            sql,
        };
        Ok(SqliteQueue {
            engine: Engine::new(driver, caps, &self.common, RemoteWakeups::Off),
            target: redact_url(&self.target).into(),
        })
    }
}

/// Makes sure the writer connection goes back to its pool outside any transaction.
///
/// sqlx counts open transactions itself and refuses to begin one while its count is not zero.
/// When SQLite ends a transaction on its own (it may roll back after `SQLITE_FULL` or
/// `SQLITE_IOERR`, for example when the disk fills during `COMMIT`), or a caller's statement
/// ends it behind sqlx's back, the `ROLLBACK` that sqlx then sends fails with "no transaction is
/// active" and its count stays at one: every later `BEGIN IMMEDIATE` on the only writer
/// connection would fail until the process restarts. Here the count is brought back to zero by
/// giving each stale `ROLLBACK` a real transaction to end; if even that fails, the connection is
/// closed and the pool opens a new one (for an in-memory database that loses its contents, which
/// is still better than a queue that can never write again).
async fn settle_transaction(conn: &mut sqlx::SqliteConnection) -> Result<bool, sqlx::Error> {
    use sqlx::{Connection, Executor};
    use sqlx_core::transaction::TransactionManager;
    type Manager = <sqlx::Sqlite as sqlx::Database>::TransactionManager;
    if !conn.is_in_transaction() {
        return Ok(true);
    }
    // A transaction dropped without commit queued its ROLLBACK; the ping runs after it.
    conn.ping().await?;
    for _ in 0..8 {
        if !conn.is_in_transaction() {
            return Ok(true);
        }
        if Manager::rollback(conn).await.is_err() {
            conn.execute("BEGIN").await?;
            Manager::rollback(conn).await?;
        }
    }
    Ok(!conn.is_in_transaction())
}

fn unavailable_or_database(e: sqlx::Error) -> Error {
    crate::error::classify(&e).error(e)
}
