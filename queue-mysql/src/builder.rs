//! The builder: connection settings, table prefix, claim strategy, policies.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use queue_core::validate::{self, redact_url};
use queue_core::{ClaimStrategy, Error, Limits, Result, RetryPolicy};
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::Executor;

use crate::error;
use crate::queue::{Inner, MySqlQueue, ServerInfo};

/// Longest table prefix: MySQL and MariaDB table names are at most 64 characters, and the
/// longest name made from it is `{prefix}migrations`.
const MAX_PREFIX: usize = 64 - "migrations".len();

/// Most jobs one claim may take: the optimistic claim's UPDATE binds 5 values per job, and a
/// statement takes at most 65,535.
const MAX_POP: usize = 13_000;

/// Room left in a packet for everything of a job but its payload (ids, queue, dedup key, ...).
const PACKET_OVERHEAD: u64 = 64 * 1024;

/// Configures and connects a [`MySqlQueue`]. Made by [`MySqlQueue::builder`].
#[derive(Clone, Debug)]
pub struct MySqlQueueBuilder {
    url: String,
    table_prefix: String,
    claim: Option<ClaimStrategy>,
    retry_policy: RetryPolicy,
    limits: Limits,
    max_connections: u32,
    connect_timeout: Duration,
    lock_retries: u32,
}

impl MySqlQueueBuilder {
    pub(crate) fn new(url: impl Into<String>) -> Self {
        MySqlQueueBuilder {
            url: url.into(),
            table_prefix: "queue_".into(),
            claim: None,
            retry_policy: RetryPolicy::default(),
            limits: Limits::default(),
            max_connections: 10,
            connect_timeout: Duration::from_secs(5),
            lock_retries: 5,
        }
    }

    /// Prefix of the table names (`{prefix}jobs`, `{prefix}migrations`); default `queue_`.
    /// Must be a plain identifier (letters, digits, `_`, not starting with a digit).
    pub fn table_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.table_prefix = prefix.into();
        self
    }

    /// How `pop` claims: [`ClaimStrategy::SkipLocked`] (the default where the server has
    /// `SKIP LOCKED`: MySQL 8.0.1+, MariaDB 10.6+) or [`ClaimStrategy::Optimistic`] (the
    /// default on older servers). [`ClaimStrategy::WriteLock`] is rejected by `connect`.
    pub fn claim_strategy(mut self, strategy: ClaimStrategy) -> Self {
        self.claim = Some(strategy);
        self
    }

    /// The retry policy `fail` applies; default [`RetryPolicy::default`].
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry_policy = policy;
        self
    }

    /// Size limits; default [`Limits::default`].
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Most pooled connections; default 10.
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n;
        self
    }

    /// How long to wait for a connection before [`Error::Unavailable`]; default 5 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How many times a claim that hit a deadlock (1213) or lock wait timeout (1205) is retried,
    /// with jittered backoff, before the error surfaces; default 5.
    pub fn lock_retries(mut self, n: u32) -> Self {
        self.lock_retries = n;
        self
    }

    fn options(&self) -> Result<MySqlConnectOptions> {
        let url = match self.url.split_once("://") {
            Some(("mysql", _)) => self.url.clone(),
            Some(("mariadb", rest)) => format!("mysql://{rest}"),
            _ => {
                return Err(Error::invalid(
                    "url",
                    format!(
                        "must start with mysql:// or mariadb:// (got {})",
                        redact_url(&self.url)
                    ),
                ))
            }
        };
        // The driver's parse error may quote the URL, so only the redacted URL is reported.
        let opts = MySqlConnectOptions::from_str(&url).map_err(|_| {
            Error::invalid(
                "url",
                format!("is not a valid MySQL URL: {}", redact_url(&self.url)),
            )
        })?;
        Ok(opts.timezone(Some("+00:00".to_owned())))
    }

    /// Validates the settings, connects, and detects the server; does not migrate.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad URL, prefix, strategy or pool size;
    /// [`Error::Unavailable`] when no connection could be made within the connect timeout.
    pub async fn connect(self) -> Result<MySqlQueue> {
        validate::identifier("table_prefix", &self.table_prefix)?;
        if self.table_prefix.len() > MAX_PREFIX {
            return Err(Error::invalid(
                "table_prefix",
                format!(
                    "must be at most {MAX_PREFIX} characters (table names are at most 64, \
                     and the longest suffix is `migrations`)"
                ),
            ));
        }
        if self.max_connections == 0 {
            return Err(Error::invalid("max_connections", "must be at least 1"));
        }
        if let Some(ClaimStrategy::WriteLock) = self.claim {
            return Err(Error::invalid(
                "claim_strategy",
                "MySQL and MariaDB support skip_locked or optimistic, not write_lock",
            ));
        }
        if self.limits.max_pop > MAX_POP {
            return Err(Error::invalid(
                "limits.max_pop",
                format!(
                    "must be at most {MAX_POP}: a claim binds five values per job and a \
                     statement takes at most 65,535"
                ),
            ));
        }
        let options = self.options()?;
        let pool = MySqlPoolOptions::new()
            .max_connections(self.max_connections)
            .acquire_timeout(self.connect_timeout)
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    // Claims need READ COMMITTED: no gap locks, and locks on rows that do not
                    // match are released at once. The time zone is set by the connect options.
                    conn.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                        .await?;
                    Ok(())
                })
            })
            .connect_with(options);
        let pool = tokio::time::timeout(self.connect_timeout + Duration::from_secs(1), pool)
            .await
            .map_err(|_| {
                Error::unavailable(format!("no connection within {:?}", self.connect_timeout))
            })?
            .map_err(error::map)?;
        let server = ServerInfo::detect(&pool).await?;
        // A job travels in one packet; a payload the server cannot receive would fail every
        // push of it (and drop the connection), so refuse such limits up front.
        let needed = self.limits.max_payload_bytes as u64 + PACKET_OVERHEAD;
        if server.max_packet > 0 && needed > server.max_packet {
            return Err(Error::invalid(
                "limits.max_payload_bytes",
                format!(
                    "must leave room in the server's max_allowed_packet of {} bytes \
                     (at most {} bytes)",
                    server.max_packet,
                    server.max_packet.saturating_sub(PACKET_OVERHEAD)
                ),
            ));
        }
        let claim = match self.claim {
            Some(c) => c,
            None if server.skip_locked => ClaimStrategy::SkipLocked,
            None => ClaimStrategy::Optimistic,
        };
        if claim == ClaimStrategy::SkipLocked && !server.skip_locked {
            return Err(Error::invalid(
                "claim_strategy",
                format!(
                    "skip_locked needs MySQL 8.0.1+ or MariaDB 10.6+ (server is {})",
                    server.version
                ),
            ));
        }
        tracing::debug!(
            target: "queue::mysql",
            url = %redact_url(&self.url),
            server = %server.version,
            claim = claim.as_str(),
            "connected"
        );
        Ok(MySqlQueue {
            inner: Arc::new(Inner::new(
                pool,
                &self.table_prefix,
                server,
                claim,
                self.retry_policy,
                self.limits,
                self.lock_retries,
            )),
        })
    }
}
