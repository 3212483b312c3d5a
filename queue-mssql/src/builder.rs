//! [`MsSqlQueueBuilder`]: configuration, validation and connecting.

use std::fmt;
use std::time::Duration;

use queue_core::engine::{first_contact, CommonOptions, RemoteWakeups};
use queue_core::validate;
use queue_core::{Capabilities, ClaimStrategy, Dialect, Engine, Error, Result, Wakeups};

use crate::bind::Params;
use crate::driver::MsSqlDriver;
use crate::error::{classify, MsSqlError};
use crate::options::{redact, Target};
use crate::pool::{open, ConnectionManager, MsSqlConnection};
use crate::queue::MsSqlQueue;
use crate::sql::{Statements, MAX_ROWS_PER_STATEMENT};

/// Pooled connections unless set otherwise.
const DEFAULT_MAX_CONNECTIONS: u32 = 16;
/// The oldest major version supported: SQL Server 2016 (13.x), whose nonclustered index keys
/// may be 1,700 bytes long (`jobs_dedup_idx` needs up to 1,276).
const MIN_MAJOR_VERSION: u32 = 13;
/// Largest payload: NVARCHAR(MAX) holds 2 GB, and text is stored as UTF-16 (up to twice the
/// bytes of its UTF-8 form).
const MAX_PAYLOAD_BYTES: usize = 1 << 30;

/// Configures and connects an [`MsSqlQueue`]. Made by [`MsSqlQueue::builder`].
#[derive(Clone)]
pub struct MsSqlQueueBuilder {
    url: String,
    schema: String,
    common: CommonOptions,
}

impl fmt::Debug for MsSqlQueueBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsSqlQueueBuilder")
            .field("url", &redact(&self.url))
            .field("schema", &self.schema)
            .field("common", &self.common)
            .finish()
    }
}

/// What the first connection learned about the server.
#[derive(Debug)]
struct ServerInfo {
    version: String,
    edition: String,
    rcsi: bool,
}

impl ServerInfo {
    fn major(&self) -> Option<u32> {
        self.version.split('.').next()?.parse().ok()
    }

    /// The version and edition, as `capabilities().server_version` reports them (the version
    /// first, as every backend reports it: `16.0.4135.4 (Standard Edition)`).
    fn version_string(&self) -> String {
        if self.edition.is_empty() {
            self.version.clone()
        } else {
            format!("{} ({})", self.version, self.edition)
        }
    }

    /// The product, version and edition, for messages: `SQL Server 16.0.4135.4 (Standard
    /// Edition)`.
    fn banner(&self) -> String {
        format!("SQL Server {}", self.version_string())
    }
}

impl MsSqlQueueBuilder {
    pub(crate) fn new(url: String) -> Self {
        MsSqlQueueBuilder {
            url,
            schema: "queue".into(),
            common: CommonOptions::default(),
        }
    }

    queue_core::common_builder_methods!();

    /// The schema holding the queue's tables (default `queue`, created by `migrate`); a plain
    /// identifier.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    fn check(&self) -> Result<(ClaimStrategy, Target)> {
        validate::identifier("schema", &self.schema)?;
        let claim = self.common.validate(
            "SQL Server",
            &[ClaimStrategy::SkipLocked, ClaimStrategy::Optimistic],
        )?;
        if self.common.limits.max_pop > MAX_ROWS_PER_STATEMENT {
            return Err(Error::invalid(
                "limits.max_pop",
                format!(
                    "must be at most {MAX_ROWS_PER_STATEMENT} on SQL Server (one claim stays \
                     far below the 5,000 locks at which SQL Server locks the whole table)"
                ),
            ));
        }
        if self.common.limits.max_payload_bytes > MAX_PAYLOAD_BYTES {
            return Err(Error::invalid(
                "limits.max_payload_bytes",
                "must be at most 1 GiB on SQL Server (NVARCHAR(MAX) holds 2 GB of UTF-16)",
            ));
        }
        if self.common.limits.max_output_bytes > MAX_PAYLOAD_BYTES
            || self.common.limits.max_meta_bytes > MAX_PAYLOAD_BYTES
        {
            let field = if self.common.limits.max_output_bytes > MAX_PAYLOAD_BYTES {
                "limits.max_output_bytes"
            } else {
                "limits.max_meta_bytes"
            };
            return Err(Error::invalid(
                field,
                "must be at most 1 GiB on SQL Server (NVARCHAR(MAX) holds 2 GB of UTF-16)",
            ));
        }
        let target = Target::parse(&self.url)?;
        if target.instance && !cfg!(feature = "sql-browser") {
            return Err(Error::invalid(
                "url",
                format!(
                    "names a named instance ({}); give its port instead, or enable the \
                     `sql-browser` feature of dbqueue-mssql",
                    target.address
                ),
            ));
        }
        Ok((claim, target))
    }

    /// Validates the configuration and connects (without migrating; see
    /// [`queue_core::Queue::migrate`]).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad setting or a server older than SQL Server 2016;
    /// [`Error::Unavailable`] naming the server's address when no connection could be made
    /// within the connect timeout.
    pub async fn connect(self) -> Result<MsSqlQueue> {
        let (claim, mut target) = self.check()?;
        let timeout = self.common.connect_timeout;
        target.config.handshake_timeout(Some(timeout));
        let sql = Statements::new(&[("{schema}", &self.schema)]);
        let (client, info) = first(&target, &sql, timeout).await?;
        if info.major().is_some_and(|m| m < MIN_MAJOR_VERSION) {
            return Err(Error::invalid(
                "url",
                format!(
                    "names {} at {}; the queue needs SQL Server 2016 (13.x) or later",
                    info.banner(),
                    target.address
                ),
            ));
        }
        tracing::debug!(target: crate::LOG_TARGET, url = %redact(&self.url), schema = %self.schema, server = %info.banner(), read_committed_snapshot = info.rcsi, "connected");
        let max = self
            .common
            .max_connections
            .unwrap_or(DEFAULT_MAX_CONNECTIONS);
        let pool = bb8::Pool::builder()
            .max_size(max)
            .connection_timeout(timeout)
            // A ping before every checkout would double the round trips; a dead session
            // surfaces once as Unavailable and is then replaced.
            .test_on_check_out(false)
            .error_sink(Box::new(LogSink))
            .build_unchecked(ConnectionManager::new(target.config.clone()));
        // The first connection joins the pool rather than being thrown away.
        let _ = pool.add(MsSqlConnection::new(client));
        let caps = Capabilities {
            dialect: Dialect::MsSql,
            claim,
            wakeups: Wakeups::InProcess,
            time_precision: Duration::from_micros(1),
            transactions: true,
            server_version: Some(info.version_string()),
            profile: queue_core::EngineProfile::of(queue_core::ServerKind::MsSql),
            limits: self.common.limits.clone(),
        };
        let driver = MsSqlDriver {
            pool,
            schema: self.schema,
            sql,
        };
        Ok(MsSqlQueue {
            engine: Engine::new(driver, caps, &self.common, RemoteWakeups::Off),
        })
    }
}

/// Connects once, directly, and reads what the builder needs to know (see
/// [`queue_core::engine::first_contact`]).
async fn first(
    target: &Target,
    sql: &Statements,
    timeout: Duration,
) -> Result<(crate::pool::Client, ServerInfo)> {
    let attempt = async {
        let mut conn = MsSqlConnection::new(open(&target.config).await?);
        let rows = conn.fetch(&sql.server_version, Params::default()).await?;
        let row = rows
            .first()
            .ok_or_else(|| MsSqlError::Decode("no server version".into()))?;
        let info = ServerInfo {
            version: row
                .try_get::<&str, _>("version")?
                .unwrap_or_default()
                .to_owned(),
            edition: row
                .try_get::<&str, _>("edition")?
                .unwrap_or_default()
                .to_owned(),
            rcsi: row.try_get::<i32, _>("rcsi")?.unwrap_or(0) == 1,
        };
        Ok::<_, MsSqlError>((conn.into_client(), info))
    };
    first_contact(
        "SQL Server",
        target.address.clone(),
        timeout,
        attempt,
        classify,
    )
    .await
}

/// Logs what the pool could not hand to a caller (a failed background connect).
#[derive(Clone, Copy, Debug)]
struct LogSink;

impl bb8::ErrorSink<tiberius::error::Error> for LogSink {
    fn sink(&self, error: tiberius::error::Error) {
        tracing::warn!(target: crate::LOG_TARGET, %error, "could not open a pooled connection");
    }

    fn boxed_clone(&self) -> Box<dyn bb8::ErrorSink<tiberius::error::Error>> {
        Box::new(*self)
    }
}

#[cfg(test)]
mod tests {
    use queue_core::Limits;

    use super::*;

    fn field(r: Result<(ClaimStrategy, Target)>) -> String {
        match r {
            Err(Error::InvalidInput { field, rule }) => {
                assert!(!rule.contains("hunter2"), "{rule}");
                field
            }
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    fn builder() -> MsSqlQueueBuilder {
        MsSqlQueue::builder("mssql://sa:hunter2@127.0.0.1:1433/jobs")
    }

    #[test]
    fn settings_are_checked_before_connecting() {
        let (claim, target) = builder().check().unwrap();
        assert_eq!(claim, ClaimStrategy::SkipLocked);
        assert_eq!(target.address, "127.0.0.1:1433");
        let (claim, _) = builder()
            .claim_strategy(ClaimStrategy::Optimistic)
            .check()
            .unwrap();
        assert_eq!(claim, ClaimStrategy::Optimistic);

        assert_eq!(field(builder().schema("bad-schema;").check()), "schema");
        assert_eq!(field(builder().schema("s".repeat(64)).check()), "schema");
        assert_eq!(field(builder().schema("").check()), "schema");
        assert_eq!(
            field(builder().claim_strategy(ClaimStrategy::WriteLock).check()),
            "claim_strategy"
        );
        assert_eq!(
            field(builder().max_connections(0).check()),
            "max_connections"
        );
        assert_eq!(
            field(builder().connect_timeout(Duration::ZERO).check()),
            "connect_timeout"
        );
        assert_eq!(field(builder().lock_retries(21).check()), "lock_retries");
        let wide = Limits {
            max_pop: 1_001,
            ..Limits::default()
        };
        assert_eq!(field(builder().limits(wide).check()), "limits.max_pop");
        let huge = Limits {
            max_payload_bytes: (1 << 30) + 1,
            ..Limits::default()
        };
        assert_eq!(
            field(builder().limits(huge).check()),
            "limits.max_payload_bytes"
        );
        assert_eq!(
            field(MsSqlQueue::builder("postgres://u:hunter2@h/db").check()),
            "url"
        );
        assert_eq!(
            field(MsSqlQueue::builder("mssql://sa:hunter2@h:99999/db").check()),
            "url"
        );
    }

    #[cfg(not(feature = "sql-browser"))]
    #[test]
    fn named_instances_need_the_browser_feature() {
        let r = MsSqlQueue::builder("mssql://sa:hunter2@host%5CSQLEXPRESS/db").check();
        assert_eq!(field(r), "url");
    }

    #[test]
    fn the_debug_form_hides_the_password() {
        let shown = format!("{:?}", builder());
        assert!(!shown.contains("hunter2"), "{shown}");
        let shown = format!(
            "{:?}",
            MsSqlQueue::builder("Server=tcp:h,1433;User Id=sa;Password=hunter2")
        );
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn server_versions() {
        let info = |v: &str| ServerInfo {
            version: v.into(),
            edition: "Developer Edition (64-bit)".into(),
            rcsi: false,
        };
        assert_eq!(info("16.0.4135.4").major(), Some(16));
        assert_eq!(info("12.0.6024.0").major(), Some(12));
        assert_eq!(info("").major(), None);
        assert_eq!(
            info("16.0.4135.4").version_string(),
            "16.0.4135.4 (Developer Edition (64-bit))"
        );
        assert_eq!(
            info("16.0.4135.4").banner(),
            "SQL Server 16.0.4135.4 (Developer Edition (64-bit))"
        );
        let bare = ServerInfo {
            version: "12.0.2000.8".into(),
            edition: String::new(),
            rcsi: false,
        };
        assert_eq!(bare.version_string(), "12.0.2000.8");
    }

    #[tokio::test]
    async fn a_closed_port_is_unavailable_naming_the_address() {
        let err = MsSqlQueue::builder("mssql://sa:hunter2@127.0.0.1:1/jobs")
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await
            .expect_err("nothing listens on port 1");
        let shown = format!("{err} {err:?}");
        assert!(matches!(err, Error::Unavailable { .. }), "{shown}");
        assert!(shown.contains("127.0.0.1:1"), "{shown}");
        assert!(shown.contains("SQL Server"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
