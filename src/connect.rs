//! Opening a queue from a URL: the URL's scheme names the backend.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use queue_core::{ClaimStrategy, CommonOptions, Error, Limits, Queue, Result, RetryPolicy};

/// The log target of this module.
const LOG_TARGET: &str = "queue::connect";

/// The schemes [`connect`] understands, for error messages.
const KNOWN_SCHEMES: &str =
    "sqlite:, sqlite://, postgres://, postgresql://, mysql://, mariadb://, \
                             mssql://, sqlserver://, memory:// (or a file path ending in .db, \
                             .sqlite or .sqlite3, or an ADO.NET connection string Server=...;...)";

/// A database a URL can name. Which of them this build can open depends on its cargo features.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// SQLite: `sqlite://path/to/file.db`, `sqlite:file.db`, `sqlite::memory:`, or a bare path
    /// ending in `.db`, `.sqlite` or `.sqlite3`. Feature `sqlite` (default).
    Sqlite,
    /// PostgreSQL: `postgres://` or `postgresql://`. Feature `postgres`.
    Postgres,
    /// MySQL or MariaDB: `mysql://` or `mariadb://`. Feature `mysql`.
    MySql,
    /// SQL Server: `mssql://`, `sqlserver://`, or an ADO.NET connection string
    /// (`Server=tcp:host,1433;Database=...`). Feature `mssql`.
    MsSql,
    /// The in-memory store, for tests: `memory://` (a private store) or `memory://NAME` (the
    /// process-wide store `NAME`). Feature `memory`.
    Memory,
}

impl Backend {
    /// Which backend `url` names.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `url` when it is empty or its scheme is unknown. The
    /// message never contains the URL's credentials.
    pub fn from_url(url: &str) -> Result<Backend> {
        let url = url.trim();
        if url.is_empty() {
            return Err(Error::invalid("url", "must not be empty"));
        }
        let lower = url.to_ascii_lowercase();
        if is_ado_string(url) {
            return Ok(Backend::MsSql);
        }
        if lower.starts_with("sqlite:") {
            return Ok(Backend::Sqlite);
        }
        if let Some((scheme, _)) = lower.split_once("://") {
            return match scheme {
                "postgres" | "postgresql" => Ok(Backend::Postgres),
                "mysql" | "mariadb" => Ok(Backend::MySql),
                "mssql" | "sqlserver" => Ok(Backend::MsSql),
                "memory" => Ok(Backend::Memory),
                other => Err(Error::invalid(
                    "url",
                    format!(
                        "has the unknown scheme {:?}; known schemes are {KNOWN_SCHEMES}",
                        printable_scheme(other)
                    ),
                )),
            };
        }
        if [".db", ".sqlite", ".sqlite3"]
            .iter()
            .any(|ext| lower.ends_with(ext))
        {
            return Ok(Backend::Sqlite);
        }
        Err(Error::invalid(
            "url",
            format!("has no known scheme; use one of {KNOWN_SCHEMES}"),
        ))
    }

    /// The cargo feature of `dbqueue` that includes this backend.
    pub fn feature(&self) -> Option<&'static str> {
        match self {
            Backend::Sqlite => Some("sqlite"),
            Backend::Postgres => Some("postgres"),
            Backend::MySql => Some("mysql"),
            Backend::MsSql => Some("mssql"),
            Backend::Memory => Some("memory"),
        }
    }

    /// Whether this build includes the backend.
    pub fn is_enabled(&self) -> bool {
        match self {
            Backend::Sqlite => cfg!(feature = "sqlite"),
            Backend::Postgres => cfg!(feature = "postgres"),
            Backend::MySql => cfg!(feature = "mysql"),
            Backend::MsSql => cfg!(feature = "mssql"),
            Backend::Memory => cfg!(feature = "memory"),
        }
    }

    /// A human name: `SQLite`, `PostgreSQL`, `MySQL/MariaDB`, `SQL Server`, `the in-memory
    /// store`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
            Backend::MySql => "MySQL/MariaDB",
            Backend::MsSql => "SQL Server",
            Backend::Memory => "the in-memory store",
        }
    }

    /// The error for a backend this build cannot open.
    fn unavailable_error(&self) -> Error {
        match self.feature() {
            Some(feature) => Error::invalid(
                "url",
                format!(
                    "names {}, which this build does not include; enable the `{feature}` \
                     feature of dbqueue (e.g. `cargo run --features {feature}`)",
                    self.name()
                ),
            ),
            None => Error::invalid("url", format!("names {}", self.name())),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `url` is an ADO.NET connection string (`Server=...;...`), which names SQL Server:
/// no scheme, and one of the keys that name a server.
fn is_ado_string(url: &str) -> bool {
    const SERVER_KEYS: [&str; 5] = [
        "server",
        "data source",
        "address",
        "addr",
        "network address",
    ];
    let lower = url.to_ascii_lowercase();
    !lower.contains("://")
        && lower
            .split(';')
            .filter_map(|pair| pair.split_once('=').map(|(key, _)| key.trim()))
            .any(|key| SERVER_KEYS.contains(&key))
}

/// `url` with its password taken out, in whichever form it comes (URL or connection string).
fn redacted(url: &str) -> String {
    #[cfg(feature = "mssql")]
    {
        queue_mssql::redact(url)
    }
    #[cfg(not(feature = "mssql"))]
    {
        if is_ado_string(url) {
            "(an ADO.NET connection string)".to_owned()
        } else {
            queue_core::validate::redact_url(url)
        }
    }
}

/// A scheme as typed, cut short and stripped of anything odd, so that a mistyped URL cannot put
/// a credential or control characters into an error message.
fn printable_scheme(scheme: &str) -> String {
    let cleaned: String = scheme
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        .take(32)
        .collect();
    cleaned
}

/// Settings for [`connect_with`]. Unset fields keep the backend's defaults.
///
/// ```
/// use std::time::Duration;
/// use dbqueue::{Options, RetryPolicy};
///
/// let options = Options {
///     retry_policy: RetryPolicy { base: Duration::from_millis(200), ..RetryPolicy::default() },
///     max_connections: Some(8),
///     ..Options::default()
/// };
/// # let _ = options;
/// ```
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The backoff `fail` applies.
    pub retry_policy: RetryPolicy,
    /// Size limits (payload bytes, batch size, pop size).
    pub limits: Limits,
    /// How `pop` claims; `None` keeps the backend's native strategy (write lock on SQLite and
    /// the in-memory store, `SKIP LOCKED` on PostgreSQL and on MySQL 8 / MariaDB 10.6+,
    /// optimistic on older MySQL and MariaDB servers).
    pub claim_strategy: Option<ClaimStrategy>,
    /// Most pooled connections (on SQLite: read connections; writes use one connection).
    pub max_connections: Option<u32>,
    /// How long to wait for a connection before [`Error::Unavailable`].
    pub connect_timeout: Option<Duration>,
    /// PostgreSQL and SQL Server only: the schema holding the tables (default `queue`).
    pub schema: Option<String>,
    /// MySQL/MariaDB only: the prefix of the table names (default `queue_`).
    pub table_prefix: Option<String>,
    /// SQLite only: `PRAGMA synchronous = FULL` (every commit fsynced, survives power loss)
    /// instead of `NORMAL` (survives process crashes).
    pub sqlite_synchronous_full: bool,
    /// PostgreSQL only: keep finished jobs in time partitions of this interval, turned on by
    /// the next migration (`PostgresQueueBuilder::finished_partitions`; in the URL,
    /// `finished_partitions=24h`).
    pub finished_partitions: Option<Duration>,
}

impl Options {
    /// The settings every backend shares.
    fn common(&self) -> CommonOptions {
        let defaults = CommonOptions::default();
        CommonOptions {
            claim_strategy: self.claim_strategy,
            retry_policy: self.retry_policy.clone(),
            limits: self.limits.clone(),
            max_connections: self.max_connections,
            connect_timeout: self.connect_timeout.unwrap_or(defaults.connect_timeout),
            ..defaults
        }
    }

    /// Rejects settings that do not apply to `backend`, so that a misplaced setting is never
    /// silently ignored.
    fn check_applies_to(&self, backend: Backend) -> Result<()> {
        if self.schema.is_some() && !matches!(backend, Backend::Postgres | Backend::MsSql) {
            return Err(Error::invalid(
                "schema",
                format!(
                    "applies to PostgreSQL and SQL Server only, not {}{}",
                    backend.name(),
                    if backend == Backend::MySql {
                        " (use table_prefix)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if self.table_prefix.is_some() && backend != Backend::MySql {
            return Err(Error::invalid(
                "table_prefix",
                format!("applies to MySQL/MariaDB only, not {}", backend.name()),
            ));
        }
        if self.finished_partitions.is_some() && backend != Backend::Postgres {
            return Err(Error::invalid(
                "finished_partitions",
                format!("applies to PostgreSQL only, not {}", backend.name()),
            ));
        }
        if self.sqlite_synchronous_full && backend != Backend::Sqlite {
            return Err(Error::invalid(
                "sqlite_synchronous_full",
                format!("applies to SQLite only, not {}", backend.name()),
            ));
        }
        Ok(())
    }
}

/// Opens the queue stored in the database `url` names, with the backend's default settings.
/// Does not migrate; see [`connect_and_migrate`] or [`Queue::migrate`].
///
/// Recognised URLs: `sqlite://path`, `sqlite:path`, `sqlite::memory:` or a path ending in `.db`,
/// `.sqlite` or `.sqlite3` (feature `sqlite`, on by default); `postgres://` and
/// `postgresql://` (feature `postgres`); `mysql://` and `mariadb://` (feature `mysql`);
/// `mssql://`, `sqlserver://` and ADO.NET connection strings (feature `mssql`); `memory://`
/// and `memory://NAME` (feature `memory`: jobs in this process's memory, for tests).
///
/// # Errors
/// [`Error::InvalidInput`] naming `url` for an unknown scheme and for a backend whose feature is
/// not enabled (the message names the feature); [`Error::Unavailable`] when the database cannot
/// be reached within the connect timeout. No error message contains the URL's password.
pub async fn connect(url: &str) -> Result<Arc<dyn Queue>> {
    connect_with(url, Options::default()).await
}

/// [`connect`], then [`Queue::migrate`]: creates or upgrades the tables (idempotent, safe to run
/// from several processes at once).
///
/// # Errors
/// As [`connect`], plus the errors of [`Queue::migrate`].
pub async fn connect_and_migrate(url: &str) -> Result<Arc<dyn Queue>> {
    let queue = connect(url).await?;
    queue.migrate().await?;
    Ok(queue)
}

/// [`connect`] with settings.
///
/// # Errors
/// As [`connect`]; also [`Error::InvalidInput`] for a setting the backend rejects or one that
/// does not apply to it (e.g. `schema` on MySQL).
pub async fn connect_with(url: &str, options: Options) -> Result<Arc<dyn Queue>> {
    let url = url.trim();
    let backend = Backend::from_url(url)?;
    if !backend.is_enabled() {
        return Err(backend.unavailable_error());
    }
    options.check_applies_to(backend)?;
    if backend != Backend::Postgres && url_has_param(url, "finished_partitions") {
        return Err(Error::invalid(
            "url",
            format!(
                "finished_partitions applies to PostgreSQL only, not {}",
                backend.name()
            ),
        ));
    }
    tracing::debug!(
        target: LOG_TARGET,
        backend = backend.name(),
        url = %redacted(url),
        "connecting"
    );
    match backend {
        #[cfg(feature = "sqlite")]
        Backend::Sqlite => connect_sqlite(url, options).await,
        #[cfg(feature = "postgres")]
        Backend::Postgres => connect_postgres(url, options).await,
        #[cfg(feature = "mysql")]
        Backend::MySql => connect_mysql(url, options).await,
        #[cfg(feature = "mssql")]
        Backend::MsSql => connect_mssql(url, options).await,
        #[cfg(feature = "memory")]
        Backend::Memory => connect_memory(url, options).await,
        #[allow(unreachable_patterns)]
        other => Err(other.unavailable_error()),
    }
}

#[cfg(feature = "sqlite")]
async fn connect_sqlite(url: &str, options: Options) -> Result<Arc<dyn Queue>> {
    let queue = queue_sqlite::SqliteQueue::builder(url)
        .common_options(options.common())
        .synchronous_full(options.sqlite_synchronous_full)
        .connect()
        .await?;
    Ok(Arc::new(queue))
}

#[cfg(feature = "postgres")]
async fn connect_postgres(url: &str, options: Options) -> Result<Arc<dyn Queue>> {
    let mut builder = queue_postgres::PostgresQueue::builder(url).common_options(options.common());
    if let Some(schema) = options.schema {
        builder = builder.schema(schema);
    }
    if let Some(every) = options.finished_partitions {
        builder = builder.finished_partitions(every);
    }
    Ok(Arc::new(builder.connect().await?))
}

/// Whether the query of `url` has the parameter `key`.
fn url_has_param(url: &str, key: &str) -> bool {
    url.split_once('?').is_some_and(|(_, query)| {
        query.split('&').any(|kv| {
            kv.split('=')
                .next()
                .is_some_and(|k| k.eq_ignore_ascii_case(key))
        })
    })
}

#[cfg(feature = "mysql")]
async fn connect_mysql(url: &str, options: Options) -> Result<Arc<dyn Queue>> {
    let mut builder = queue_mysql::MySqlQueue::builder(url).common_options(options.common());
    if let Some(prefix) = options.table_prefix {
        builder = builder.table_prefix(prefix);
    }
    Ok(Arc::new(builder.connect().await?))
}

#[cfg(feature = "mssql")]
async fn connect_mssql(url: &str, options: Options) -> Result<Arc<dyn Queue>> {
    let mut builder = queue_mssql::MsSqlQueue::builder(url).common_options(options.common());
    if let Some(schema) = options.schema {
        builder = builder.schema(schema);
    }
    Ok(Arc::new(builder.connect().await?))
}

#[cfg(feature = "memory")]
async fn connect_memory(url: &str, options: Options) -> Result<Arc<dyn Queue>> {
    let queue = queue_memory::MemoryQueue::builder()
        .url(url)
        .common_options(options.common())
        .connect()
        .await?;
    Ok(Arc::new(queue))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(err: Error) -> (String, String) {
        match err {
            Error::InvalidInput { field, rule } => (field, rule),
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn schemes_name_backends() {
        for (url, backend) in [
            ("sqlite://queue.db", Backend::Sqlite),
            ("sqlite:queue.db", Backend::Sqlite),
            ("sqlite::memory:", Backend::Sqlite),
            ("SQLITE://Q.DB", Backend::Sqlite),
            ("jobs.db", Backend::Sqlite),
            ("/var/lib/app/jobs.sqlite3", Backend::Sqlite),
            ("./data/jobs.sqlite", Backend::Sqlite),
            ("postgres://u:p@localhost/db", Backend::Postgres),
            ("postgresql://localhost/db", Backend::Postgres),
            ("mysql://root@127.0.0.1:3306/test", Backend::MySql),
            ("mariadb://root@127.0.0.1:3306/test", Backend::MySql),
            ("mssql://sa:pw@localhost", Backend::MsSql),
            ("sqlserver://localhost", Backend::MsSql),
            ("MSSQL://localhost:1433/db", Backend::MsSql),
            ("sqlserver://h:1433;database=d;user=sa", Backend::MsSql),
            (
                "Server=tcp:h,1433;Database=d;User Id=sa;Password=x",
                Backend::MsSql,
            ),
            ("data source=h;initial catalog=d", Backend::MsSql),
            ("memory://", Backend::Memory),
            ("memory://jobs", Backend::Memory),
            ("MEMORY://Jobs", Backend::Memory),
        ] {
            assert_eq!(Backend::from_url(url).unwrap(), backend, "{url}");
        }
    }

    #[test]
    fn unknown_schemes_name_the_known_ones() {
        let (field, rule) = parts(Backend::from_url("redis://user:hunter2@host/0").unwrap_err());
        assert_eq!(field, "url");
        assert!(rule.contains("\"redis\""), "{rule}");
        assert!(
            rule.contains("postgres://") && rule.contains("mysql://") && rule.contains("memory://"),
            "{rule}"
        );
        assert!(!rule.contains("hunter2"), "{rule}");

        let (field, rule) = parts(Backend::from_url("jobs.txt").unwrap_err());
        assert_eq!(field, "url");
        assert!(rule.contains("sqlite://"), "{rule}");

        let (_, rule) = parts(Backend::from_url("  ").unwrap_err());
        assert_eq!(rule, "must not be empty");
    }

    #[test]
    fn scheme_in_errors_is_sanitised() {
        let (_, rule) = parts(Backend::from_url("a\nb;c://x").unwrap_err());
        assert!(!rule.contains('\n'), "{rule}");
        assert!(rule.contains("\"abc\""), "{rule}");
    }

    #[cfg(not(feature = "mssql"))]
    #[tokio::test]
    async fn a_disabled_sql_server_backend_names_its_feature() {
        for url in [
            "mssql://sa:Secret123@localhost:1433/db",
            "Server=tcp:localhost,1433;User Id=sa;Password=Secret123",
        ] {
            let err = connect(url).await.err().expect("mssql is not compiled in");
            let (field, rule) = parts(err);
            assert_eq!(field, "url");
            assert!(rule.contains("SQL Server"), "{rule}");
            assert!(rule.contains("`mssql` feature"), "{rule}");
            assert!(!rule.contains("Secret123"), "{rule}");
        }
    }

    #[cfg(feature = "mssql")]
    #[tokio::test]
    async fn sql_server_urls_reach_the_driver() {
        // Nothing listens on port 1: the connection attempt is made and refused.
        for url in [
            "mssql://sa:Secret123@127.0.0.1:1/jobs",
            "sqlserver://sa:Secret123@127.0.0.1:1/jobs?encrypt=off",
            "Server=tcp:127.0.0.1,1;Database=jobs;User Id=sa;Password=Secret123",
        ] {
            let opts = Options {
                connect_timeout: Some(Duration::from_secs(2)),
                schema: Some("jobs".into()),
                ..Options::default()
            };
            let err = connect_with(url, opts)
                .await
                .err()
                .expect("port 1 is closed");
            let shown = format!("{err} {err:?}");
            assert!(matches!(err, Error::Unavailable { .. }), "{url}: {shown}");
            assert!(shown.contains("SQL Server"), "{shown}");
            assert!(
                shown.contains("127.0.0.1:1"),
                "the host and port are named: {shown}"
            );
            assert!(!shown.contains("Secret123"), "{shown}");
        }
        let (field, rule) = parts(
            connect("mssql://sa:Secret123@127.0.0.1:1/jobs?bogus=1")
                .await
                .err()
                .unwrap(),
        );
        assert_eq!(field, "url");
        assert!(
            rule.contains("bogus") && !rule.contains("Secret123"),
            "{rule}"
        );
    }

    #[cfg(not(feature = "postgres"))]
    #[tokio::test]
    async fn a_disabled_backend_names_its_feature() {
        let err = connect("postgres://u:topsecret@localhost/db")
            .await
            .err()
            .expect("postgres is not compiled in");
        let (field, rule) = parts(err);
        assert_eq!(field, "url");
        assert!(rule.contains("`postgres` feature"), "{rule}");
        assert!(!rule.contains("topsecret"), "{rule}");
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn finished_partitions_are_refused_off_postgres() {
        let dir = std::env::temp_dir().join(format!("dbqueue-fp-{}.db", std::process::id()));
        let url = format!("sqlite://{}", dir.display());
        let opts = Options {
            finished_partitions: Some(Duration::from_secs(24 * 3600)),
            ..Options::default()
        };
        let (field, rule) = parts(connect_with(&url, opts).await.err().expect("refused"));
        assert_eq!(field, "finished_partitions");
        assert!(rule.contains("PostgreSQL only"), "{rule}");
        let (field, rule) = parts(
            connect(&format!("{url}?finished_partitions=24h"))
                .await
                .err()
                .expect("refused"),
        );
        assert_eq!(field, "url");
        assert!(
            rule.contains("finished_partitions applies to PostgreSQL only"),
            "{rule}"
        );
        assert!(!dir.exists(), "a refused connect made the database file");
    }

    #[cfg(not(feature = "memory"))]
    #[tokio::test]
    async fn a_disabled_memory_backend_names_its_feature() {
        let err = connect("memory://jobs")
            .await
            .err()
            .expect("memory is not compiled in");
        let (field, rule) = parts(err);
        assert_eq!(field, "url");
        assert!(rule.contains("in-memory store"), "{rule}");
        assert!(rule.contains("`memory` feature"), "{rule}");
    }

    #[cfg(feature = "memory")]
    #[tokio::test]
    async fn memory_urls_open_named_and_private_stores() {
        use queue_core::{Dialect, JobState, NewJob};

        let name = format!("memory://connect-{}", std::process::id());
        let first = connect_and_migrate(&name).await.unwrap();
        assert_eq!(first.capabilities().dialect, Dialect::Memory);
        let id = first
            .push(NewJob::from_json("q", r#"{"a":1}"#).unwrap())
            .await
            .unwrap();
        // The same name is the same store, as the same database URL is the same database.
        let second = connect(&name).await.unwrap();
        let job = second.get(id).await.unwrap().expect("the pushed job");
        assert_eq!(job.state, JobState::Pending);
        // `memory://` alone is a store of its own.
        let private = connect_and_migrate("memory://").await.unwrap();
        assert!(private.get(id).await.unwrap().is_none());

        let opts = Options {
            claim_strategy: Some(ClaimStrategy::Optimistic),
            ..Options::default()
        };
        let q = connect_with("memory://", opts).await.unwrap();
        assert_eq!(q.capabilities().claim, ClaimStrategy::Optimistic);
        for (opts, field) in [
            (
                Options {
                    max_connections: Some(4),
                    ..Options::default()
                },
                "max_connections",
            ),
            (
                Options {
                    schema: Some("jobs".into()),
                    ..Options::default()
                },
                "schema",
            ),
            (
                Options {
                    claim_strategy: Some(ClaimStrategy::SkipLocked),
                    ..Options::default()
                },
                "claim_strategy",
            ),
        ] {
            let err = connect_with("memory://", opts)
                .await
                .err()
                .expect("refused");
            assert_eq!(parts(err).0, field);
        }
        let err = connect("memory://a b").await.err().expect("a bad name");
        assert_eq!(parts(err).0, "url");
    }

    #[cfg(not(feature = "mysql"))]
    #[tokio::test]
    async fn a_disabled_mysql_backend_names_its_feature() {
        let err = connect("mariadb://root@localhost/db").await.err().unwrap();
        let (_, rule) = parts(err);
        assert!(rule.contains("`mysql` feature"), "{rule}");
    }

    #[test]
    fn misplaced_options_are_rejected() {
        let opts = Options {
            schema: Some("jobs".into()),
            ..Options::default()
        };
        let (field, _) = parts(opts.check_applies_to(Backend::Sqlite).unwrap_err());
        assert_eq!(field, "schema");
        assert!(opts.check_applies_to(Backend::Postgres).is_ok());
        assert!(opts.check_applies_to(Backend::MsSql).is_ok());
        assert!(opts.check_applies_to(Backend::MySql).is_err());

        let opts = Options {
            table_prefix: Some("jobs_".into()),
            ..Options::default()
        };
        let (field, _) = parts(opts.check_applies_to(Backend::Postgres).unwrap_err());
        assert_eq!(field, "table_prefix");
        assert!(opts.check_applies_to(Backend::MySql).is_ok());

        let opts = Options {
            sqlite_synchronous_full: true,
            ..Options::default()
        };
        assert!(opts.check_applies_to(Backend::MySql).is_err());
        assert!(opts.check_applies_to(Backend::Sqlite).is_ok());
    }

    #[cfg(feature = "sqlite")]
    fn temp_db(tag: &str) -> std::path::PathBuf {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        std::env::temp_dir().join(format!(
            "dbqueue-connect-{tag}-{}-{nanos}.db",
            std::process::id()
        ))
    }

    #[cfg(feature = "sqlite")]
    fn remove_db(path: &std::path::Path) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn sqlite_urls_and_paths_open_the_same_queue() {
        use queue_core::{Dialect, JobState, NewJob};

        let path = temp_db("same");
        let by_path = connect_and_migrate(&path.display().to_string())
            .await
            .unwrap();
        assert_eq!(by_path.capabilities().dialect, Dialect::Sqlite);
        let id = by_path
            .push(NewJob::from_json("q", r#"{"a":1}"#).unwrap())
            .await
            .unwrap();

        let by_url = connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        let job = by_url.get(id).await.unwrap().expect("the pushed job");
        assert_eq!(job.state, JobState::Pending);
        assert_eq!(job.payload.get(), r#"{"a":1}"#);
        let stats = by_url.stats(Some("q")).await.unwrap();
        assert_eq!(stats.len(), 1);
        assert_eq!(stats[0].available, 1);
        remove_db(&path);
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn options_reach_the_backend() {
        let path = temp_db("options");
        let url = format!("sqlite://{}", path.display());
        let queue = connect_with(
            &url,
            Options {
                claim_strategy: Some(ClaimStrategy::Optimistic),
                limits: Limits {
                    max_batch: 2,
                    ..Limits::default()
                },
                ..Options::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(queue.capabilities().claim, ClaimStrategy::Optimistic);
        assert_eq!(queue.capabilities().limits.max_batch, 2);

        let err = connect_with(
            &url,
            Options {
                claim_strategy: Some(ClaimStrategy::SkipLocked),
                ..Options::default()
            },
        )
        .await
        .err()
        .expect("SQLite cannot skip locked rows");
        assert_eq!(parts(err).0, "claim_strategy");
        remove_db(&path);
    }
}
