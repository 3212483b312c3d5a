//! [`PostgresQueueBuilder`]: configuration, validation and connecting.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use queue_core::engine::{first_contact, CommonOptions, RemoteWakeups, SLOW_STATEMENT};
use queue_core::validate::{self, redact_url};
use queue_core::{Capabilities, ClaimStrategy, Dialect, Engine, Error, Result, Wakeups};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use sqlx::ConnectOptions;
use sqlx::Connection;

use crate::driver::PgDriver;
use crate::listen::{channel_name, Listener};
use crate::queue::PostgresQueue;
use crate::sql::Statements;

/// Pooled connections unless set otherwise.
const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// Configures and connects a [`PostgresQueue`]. Made by [`PostgresQueue::builder`].
#[derive(Clone)]
pub struct PostgresQueueBuilder {
    url: String,
    schema: String,
    common: CommonOptions,
    notify: bool,
    notify_window: Duration,
}

impl fmt::Debug for PostgresQueueBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresQueueBuilder")
            .field("url", &redact_url(&self.url))
            .field("schema", &self.schema)
            .field("common", &self.common)
            .field("notify", &self.notify)
            .field("notify_window", &self.notify_window)
            .finish()
    }
}

impl PostgresQueueBuilder {
    pub(crate) fn new(url: String) -> Self {
        PostgresQueueBuilder {
            url,
            schema: "queue".into(),
            common: CommonOptions::default(),
            notify: true,
            notify_window: Duration::from_millis(5),
        }
    }

    queue_core::common_builder_methods!();

    /// The schema holding the queue's tables (default `queue`); a plain identifier.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Whether pushes send a `NOTIFY` so that idle workers in other processes wake at once
    /// (default `true`). With `false`, workers elsewhere find new jobs at their next poll.
    pub fn notify(mut self, notify: bool) -> Self {
        self.notify = notify;
        self
    }

    /// Coalesces the NOTIFYs of single pushes to one queue (default 5 ms; zero: one per push).
    ///
    /// Notifying commits take PostgreSQL's database-wide notification lock one at a time, so a
    /// NOTIFY per push halves the rate of concurrent pushes. Within the window after a push that
    /// notified, pushes skip it, and one trailing NOTIFY follows at the end of the window: an idle
    /// worker is still woken by the first push at once, and no push waits longer than the
    /// window. Pushes inside a caller's transaction and batch pushes always notify (once per
    /// queue and transaction).
    pub fn notify_window(mut self, window: Duration) -> Self {
        self.notify_window = window;
        self
    }

    fn check(&self) -> Result<(ClaimStrategy, PgConnectOptions)> {
        validate::identifier("schema", &self.schema)?;
        let claim = self.common.validate(
            "PostgreSQL",
            &[ClaimStrategy::SkipLocked, ClaimStrategy::Optimistic],
        )?;
        if self.notify_window > Duration::from_secs(1) {
            return Err(Error::invalid("notify_window", "must be at most 1 s"));
        }
        let scheme = self.url.split_once("://").map(|(s, _)| s);
        if !matches!(scheme, Some("postgres" | "postgresql")) {
            return Err(Error::invalid(
                "url",
                format!(
                    "must start with postgres:// or postgresql:// (got {})",
                    redact_url(&self.url)
                ),
            ));
        }
        let options = PgConnectOptions::from_str(&self.url).map_err(|_| {
            Error::invalid(
                "url",
                format!("is not a valid PostgreSQL URL: {}", redact_url(&self.url)),
            )
        })?;
        Ok((
            claim,
            options
                .application_name("queue")
                .log_slow_statements(log::LevelFilter::Debug, SLOW_STATEMENT),
        ))
    }

    /// Validates the configuration and connects (without migrating; see
    /// [`queue_core::Queue::migrate`]).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad setting; [`Error::Unavailable`] when no connection could
    /// be made within the connect timeout.
    pub async fn connect(self) -> Result<PostgresQueue> {
        let (claim, options) = self.check()?;
        let timeout = self.common.connect_timeout;
        let pool = PgPoolOptions::new()
            .max_connections(
                self.common
                    .max_connections
                    .unwrap_or(DEFAULT_MAX_CONNECTIONS),
            )
            .acquire_timeout(timeout)
            .acquire_slow_level(log::LevelFilter::Debug)
            // A ping before every checkout would double the round trips of every call; a dead
            // connection surfaces as Error::Unavailable once and is then discarded instead.
            .test_before_acquire(false)
            .connect_lazy_with(options.clone());
        // The LISTEN connection has a pool of its own, so it never takes a connection the
        // queue's calls need; it connects only when the first wait starts the listener.
        let listen_pool = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .acquire_timeout(timeout)
            .acquire_slow_level(log::LevelFilter::Debug)
            .connect_lazy_with(options.clone());
        let sql = Statements::new(&[("{schema}", &self.schema)]);
        let version = server_version(&options, &sql, timeout).await?;
        tracing::debug!(target: crate::LOG_TARGET, url = %redact_url(&self.url), schema = %self.schema, server_version = %version, "connected");
        let caps = Capabilities {
            dialect: Dialect::Postgres,
            claim,
            wakeups: Wakeups::ListenNotify,
            time_precision: Duration::from_micros(1),
            transactions: true,
            server_version: Some(version),
            limits: self.common.limits.clone(),
        };
        let remote = if self.notify {
            RemoteWakeups::Notify {
                window: self.notify_window,
            }
        } else {
            RemoteWakeups::Off
        };
        let driver = PgDriver {
            pool,
            listen_pool,
            channel: channel_name(&self.schema),
            schema: self.schema,
            sql,
            listener: Listener::default(),
        };
        Ok(PostgresQueue {
            engine: Engine::new(driver, caps, &self.common, remote),
        })
    }
}

/// Connects once, directly, and reads the server version (see
/// [`queue_core::engine::first_contact`]).
async fn server_version(
    options: &PgConnectOptions,
    sql: &Statements,
    timeout: Duration,
) -> Result<String> {
    let address = format!("{}:{}", options.get_host(), options.get_port());
    let attempt = async {
        let mut conn = PgConnection::connect_with(options).await?;
        let version: String = sqlx::query_scalar(sql.server_version.clone())
            .fetch_one(&mut conn)
            .await?;
        let _ = conn.close().await;
        Ok::<_, sqlx::Error>(version)
    };
    first_contact(
        "PostgreSQL",
        address,
        timeout,
        attempt,
        crate::error::classify,
    )
    .await
}
