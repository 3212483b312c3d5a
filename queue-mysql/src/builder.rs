//! The builder: connection settings, table prefix, claim strategy, policies.

use std::str::FromStr;
use std::time::Duration;

use queue_core::engine::hosts::{HostList, Route, SessionAttrs};
use queue_core::engine::{CommonOptions, RemoteWakeups, Retirement, SLOW_STATEMENT};
use queue_core::validate::{self, redact_url};
use queue_core::{
    Capabilities, ClaimStrategy, Engine, Error, Profile, Result, ServerKind, Wakeups,
};
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::Executor;
use sqlx::{ConnectOptions, Connection};

use crate::driver::MySqlDriver;
use crate::queue::MySqlQueue;
use crate::server::{MySqlHosts, Nodes};
use crate::sql::Statements;

/// One host of the URL: its label (`host:port`) and connect options.
type Host = (String, MySqlConnectOptions);

/// The URL parameter this crate reads itself (sqlx's parser would reject it).
const PROFILE: &str = "profile";

/// Longest table prefix: MySQL and MariaDB table names are at most 64 characters, and the
/// longest name made from it is `{prefix}migrations`.
const MAX_PREFIX: usize = 64 - "migrations".len();

/// Most jobs one claim may take: the optimistic claim's UPDATE binds 5 values per job, and a
/// statement takes at most 65,535.
const MAX_POP: usize = 13_000;

/// Room left in a packet for everything of a job but its payload and metadata (ids, queue, dedup
/// key, kind, ...), or of a completion but its output.
const PACKET_OVERHEAD: u64 = 64 * 1024;

/// Pooled connections unless set otherwise.
const DEFAULT_MAX_CONNECTIONS: u32 = 10;

/// Claims need READ COMMITTED: no gap locks, and locks on rows that do not match are released
/// at once. Set on every connection.
const READ_COMMITTED: &str = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";

/// The pool does not ping a connection before handing it out (sqlx's default would: one more
/// round trip on every call, a third of a single push's), except one that sat idle this long,
/// which the server (`wait_timeout`) or something between (a load balancer's idle timeout) may
/// have dropped meanwhile. A connection lost otherwise (a restart, a failover) fails one call
/// with `Error::Unavailable` and is discarded; sqlx also pings each connection as it returns to
/// the pool.
const PING_AFTER_IDLE: Duration = Duration::from_secs(30);

/// Configures and connects a [`MySqlQueue`]. Made by [`MySqlQueue::builder`].
///
/// Claim strategies: [`ClaimStrategy::SkipLocked`] (the default where the server has
/// `SKIP LOCKED`: MySQL 8.0.1+, MariaDB 10.6+) or [`ClaimStrategy::Optimistic`] (the default on
/// older servers). [`ClaimStrategy::WriteLock`] is refused by `connect`. Default pool size: 10.
#[derive(Clone, Debug)]
pub struct MySqlQueueBuilder {
    url: String,
    table_prefix: String,
    common: CommonOptions,
    profile: Profile,
}

impl MySqlQueueBuilder {
    pub(crate) fn new(url: impl Into<String>) -> Self {
        MySqlQueueBuilder {
            url: url.into(),
            table_prefix: "queue_".into(),
            common: CommonOptions::default(),
            profile: Profile::Detect,
        }
    }

    queue_core::common_builder_methods!();

    /// Prefix of the table names (`{prefix}jobs`, `{prefix}migrations`); default `queue_`.
    /// Must be a plain identifier (letters, digits, `_`, not starting with a digit).
    pub fn table_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.table_prefix = prefix.into();
        self
    }

    /// Which engine to treat the server as (default: detected from its version banner; TiDB
    /// and Vitess are told apart from MySQL there). `profile=...` in the URL does the same and
    /// wins. Without `skip_locked` in the profile (TiDB takes no lock for `SKIP LOCKED`, Vitess
    /// rejects it, and [`Profile::Distributed`] turns it off) the claim is optimistic and
    /// `ClaimStrategy::SkipLocked` is refused; without `advisory_locks` migrations serialize on
    /// a leased lock row instead of `GET_LOCK`.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// The URL taken apart: each host's label (`host:port`) and connect options, the role the
    /// server must have, and the profile (the URL's, else the builder's).
    fn options(&self) -> Result<(Vec<Host>, SessionAttrs, Profile)> {
        let list = HostList::parse("url", &self.url, &["mysql", "mariadb"], &[PROFILE])?;
        let profile = match list.param(PROFILE) {
            Some(value) => Profile::from_url("url", value)?,
            None => self.profile,
        };
        let mut hosts = Vec::with_capacity(list.urls.len());
        for url in &list.urls {
            let url = match url.strip_prefix("mariadb://") {
                Some(rest) => format!("mysql://{rest}"),
                None => url.clone(),
            };
            // Neither the driver's parse error nor the URL is reported: a URL that does not
            // parse may hold its password anywhere (an unencoded `?` or `/` in it, say).
            let opts = MySqlConnectOptions::from_str(&url).map_err(|_| {
                Error::invalid(
                    "url",
                    "is not a valid MySQL URL (check the host list, the ports, and that special \
                     characters of the password are percent-encoded)",
                )
            })?;
            let label = format!("{}:{}", opts.get_host(), opts.get_port());
            hosts.push((label, opts.timezone(Some("+00:00".to_owned()))));
        }
        Ok((hosts, list.attrs, profile))
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
        let supported = [ClaimStrategy::SkipLocked, ClaimStrategy::Optimistic];
        self.common.validate("MySQL and MariaDB", &supported)?;
        if self.common.limits.max_pop > MAX_POP {
            return Err(Error::invalid(
                "limits.max_pop",
                format!(
                    "must be at most {MAX_POP}: a claim binds five values per job and a \
                     statement takes at most 65,535"
                ),
            ));
        }
        let (hosts, attrs, profile) = self.options()?;
        if let Profile::As(kind) = profile {
            if !matches!(
                kind,
                ServerKind::MySql | ServerKind::MariaDb | ServerKind::TiDb | ServerKind::Vitess
            ) {
                return Err(Error::invalid(
                    "profile",
                    format!(
                        "{kind} does not speak MySQL's protocol: use mysql, mariadb, tidb, \
                         vitess, distributed or detect"
                    ),
                ));
            }
        }
        let timeout = self.common.connect_timeout;
        let sql = Statements::new(&[("{prefix}", &self.table_prefix)]);
        let retirement = Retirement::new();
        let retired = retirement.clone();
        let options: Vec<MySqlConnectOptions> = hosts
            .iter()
            .map(|(_, o)| {
                o.clone()
                    .log_slow_statements(log::LevelFilter::Debug, SLOW_STATEMENT)
            })
            .collect();
        let pool = MySqlPoolOptions::new()
            // Connections made before the server was found read-only are closed, not reused;
            // one idle for long is pinged first (see PING_AFTER_IDLE).
            .before_acquire(move |conn, meta| {
                let keep = !retired.is_retired(meta.age);
                Box::pin(async move {
                    if keep && meta.idle_for >= PING_AFTER_IDLE {
                        return Ok(conn.ping().await.is_ok());
                    }
                    Ok(keep)
                })
            })
            .max_connections(
                self.common
                    .max_connections
                    .unwrap_or(DEFAULT_MAX_CONNECTIONS),
            )
            .acquire_timeout(timeout)
            .acquire_slow_level(log::LevelFilter::Debug)
            .test_before_acquire(false)
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    // The time zone is set by the connect options.
                    conn.execute(READ_COMMITTED).await?;
                    Ok(())
                })
            })
            .connect_lazy_with(options[0].clone());
        let route = Route::new(
            hosts.into_iter().map(|(label, _)| label).collect(),
            attrs,
            MySqlHosts {
                options,
                pool: pool.clone(),
                server_version: sql.server_version.clone(),
                server_role: sql.server_role.clone(),
            },
        );
        let nodes = Nodes::new(
            vec![route],
            retirement,
            timeout,
            "MySQL/MariaDB",
            crate::error::classify,
        );
        // The first contact: the first host of the list that fits.
        let server = nodes.start().await?;
        // A job travels in one packet with its metadata, a completion with its output; one the
        // server cannot receive would fail every time (and drop the connection), so refuse
        // such limits up front.
        let limits = &self.common.limits;
        let meta = limits.max_meta_bytes as u64;
        let needed = limits.max_payload_bytes as u64 + meta + PACKET_OVERHEAD;
        if server.max_packet > 0 && needed > server.max_packet {
            return Err(Error::invalid(
                "limits.max_payload_bytes",
                format!(
                    "must leave room in the server's max_allowed_packet of {} bytes for the \
                     metadata (max_meta_bytes {meta}) and the rest of the job (at most {} bytes)",
                    server.max_packet,
                    server.max_packet.saturating_sub(PACKET_OVERHEAD + meta)
                ),
            ));
        }
        let needed = limits.max_output_bytes as u64 + PACKET_OVERHEAD;
        if server.max_packet > 0 && needed > server.max_packet {
            return Err(Error::invalid(
                "limits.max_output_bytes",
                format!(
                    "must leave room in the server's max_allowed_packet of {} bytes (at most {} \
                     bytes)",
                    server.max_packet,
                    server.max_packet.saturating_sub(PACKET_OVERHEAD)
                ),
            ));
        }
        let profile = profile.settle(server.kind);
        let claim = match self.common.claim_strategy {
            Some(ClaimStrategy::SkipLocked) if !server.skip_locked => {
                return Err(Error::invalid(
                    "claim_strategy",
                    format!(
                        "skip_locked needs MySQL 8.0.1+ or MariaDB 10.6+ (server is {})",
                        server.version
                    ),
                ))
            }
            Some(ClaimStrategy::SkipLocked) if !profile.skip_locked => {
                return Err(Error::invalid(
                    "claim_strategy",
                    format!(
                        "skip_locked is off in the {} profile of this server ({})",
                        profile.server, server.version
                    ),
                ))
            }
            Some(c) => c,
            None if server.skip_locked && profile.skip_locked => ClaimStrategy::SkipLocked,
            None => ClaimStrategy::Optimistic,
        };
        tracing::debug!(
            target: crate::LOG_TARGET,
            url = %redact_url(&self.url),
            server = %server.version,
            claim = claim.as_str(),
            "connected"
        );
        let caps = Capabilities {
            dialect: server.dialect,
            claim,
            wakeups: Wakeups::InProcess,
            time_precision: Duration::from_micros(1),
            transactions: true,
            server_version: Some(server.version.clone()),
            profile,
            limits: self.common.limits.clone(),
        };
        let skip_locked = server.skip_locked && profile.skip_locked;
        let driver = MySqlDriver {
            pool,
            prefix: self.table_prefix,
            sql,
            server,
            nodes,
            advisory_locks: profile.advisory_locks,
            skip_locked,
        };
        Ok(MySqlQueue {
            engine: Engine::new(driver, caps, &self.common, RemoteWakeups::Off),
        })
    }
}
