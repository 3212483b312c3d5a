//! [`PostgresQueueBuilder`]: configuration, validation and connecting.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use queue_core::validate::{self, redact_url};
use queue_core::{
    Capabilities, ClaimStrategy, Dialect, Error, Limits, Result, RetryPolicy, WakeHub, Wakeups,
};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::error::map;
use crate::listen::{channel_name, Listener};
use crate::notify::Notifier;
use crate::queue::{Inner, PostgresQueue};
use crate::sql::Statements;

/// Configures and connects a [`PostgresQueue`]. Made by [`PostgresQueue::builder`].
#[derive(Clone)]
pub struct PostgresQueueBuilder {
    url: String,
    schema: String,
    claim: ClaimStrategy,
    retry_policy: RetryPolicy,
    limits: Limits,
    max_connections: u32,
    connect_timeout: Duration,
    notify: bool,
    notify_window: Duration,
}

impl fmt::Debug for PostgresQueueBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresQueueBuilder")
            .field("url", &redact_url(&self.url))
            .field("schema", &self.schema)
            .field("claim", &self.claim)
            .field("retry_policy", &self.retry_policy)
            .field("limits", &self.limits)
            .field("max_connections", &self.max_connections)
            .field("connect_timeout", &self.connect_timeout)
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
            claim: ClaimStrategy::SkipLocked,
            retry_policy: RetryPolicy::default(),
            limits: Limits::default(),
            max_connections: 16,
            connect_timeout: Duration::from_secs(5),
            notify: true,
            notify_window: Duration::from_millis(5),
        }
    }

    /// The schema holding the queue's tables (default `queue`); a plain identifier.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// How `pop` claims: [`ClaimStrategy::SkipLocked`] (the default, one statement) or
    /// [`ClaimStrategy::Optimistic`] (read, then claim by version).
    pub fn claim_strategy(mut self, claim: ClaimStrategy) -> Self {
        self.claim = claim;
        self
    }

    /// How failures are retried (default [`RetryPolicy::default`]).
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry_policy = policy;
        self
    }

    /// Size limits (default [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Most pooled connections (default 16). Waiting for work adds one more, for LISTEN.
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n;
        self
    }

    /// How long to wait for a connection before [`Error::Unavailable`] (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
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

    fn check(&self) -> Result<PgConnectOptions> {
        validate::identifier("schema", &self.schema)?;
        if !matches!(
            self.claim,
            ClaimStrategy::SkipLocked | ClaimStrategy::Optimistic
        ) {
            return Err(Error::invalid(
                "claim_strategy",
                format!(
                    "PostgreSQL supports skip_locked and optimistic, not {}",
                    self.claim.as_str()
                ),
            ));
        }
        if self.max_connections == 0 {
            return Err(Error::invalid("max_connections", "must be at least 1"));
        }
        if self.notify_window > Duration::from_secs(1) {
            return Err(Error::invalid("notify_window", "must be at most 1 s"));
        }
        if self.connect_timeout.is_zero() {
            return Err(Error::invalid("connect_timeout", "must be more than zero"));
        }
        if self.limits.max_batch == 0 || self.limits.max_pop == 0 {
            return Err(Error::invalid(
                "limits",
                "max_batch and max_pop must be at least 1",
            ));
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
        Ok(options.application_name("queue"))
    }

    /// Validates the configuration and connects (without migrating; see
    /// [`queue_core::Queue::migrate`]).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad setting; [`Error::Unavailable`] when no connection could
    /// be made within the connect timeout.
    pub async fn connect(self) -> Result<PostgresQueue> {
        let options = self.check()?;
        let pool = PgPoolOptions::new()
            .max_connections(self.max_connections)
            .acquire_timeout(self.connect_timeout)
            // A ping before every checkout would double the round trips of every call; a dead
            // connection surfaces as Error::Unavailable once and is then discarded instead.
            .test_before_acquire(false)
            .connect_lazy_with(options.clone());
        // The LISTEN connection has a pool of its own, so it never takes a connection the
        // queue's calls need; it connects only when the first wait starts the listener.
        let listen_pool = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .acquire_timeout(self.connect_timeout)
            .connect_lazy_with(options);
        let sql = Statements::new(&self.schema);
        let version = tokio::time::timeout(
            self.connect_timeout + Duration::from_secs(1),
            sqlx::query_scalar::<_, String>(&sql.server_version).fetch_one(&pool),
        )
        .await
        .map_err(|_| Error::unavailable("timed out connecting to PostgreSQL"))?
        .map_err(map)?;
        tracing::debug!(target: "queue::postgres", url = %redact_url(&self.url), schema = %self.schema, server_version = %version, "connected");
        let caps = Capabilities {
            dialect: Dialect::Postgres,
            claim: self.claim,
            wakeups: Wakeups::ListenNotify,
            time_precision: Duration::from_micros(1),
            transactions: true,
            server_version: Some(version),
            limits: self.limits.clone(),
        };
        Ok(PostgresQueue {
            inner: Arc::new(Inner {
                pool,
                listen_pool,
                channel: channel_name(&self.schema),
                schema: self.schema,
                sql,
                caps,
                retry_policy: self.retry_policy,
                limits: self.limits,
                notify: self.notify,
                notifier: Notifier::new(self.notify_window),
                hub: Arc::new(WakeHub::new()),
                listener: Listener::default(),
            }),
        })
    }
}
