//! The dashboard's state and routes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{header, HeaderValue};
use axum::middleware::from_fn_with_state;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use queue_core::{Capabilities, Dialect, Queue, Result};

use super::chart::{self, Budget, Throughput};
use super::security::{self, HostPolicy, Sessions};
use super::{actions, bulk, pages};

/// How the dashboard behaves.
#[derive(Clone, Debug)]
pub struct DashboardConfig {
    /// Hide every action and refuse every POST that would change jobs.
    pub read_only: bool,
    /// The token every request must present, if any.
    pub auth_token: Option<String>,
    /// Which `Host` headers are answered.
    pub hosts: HostPolicy,
    /// How often the overview refreshes itself.
    pub refresh: Duration,
    /// Added to cookie names, so dashboards on other ports of the same host keep their own
    /// cookies (browsers do not separate cookies by port).
    pub cookie_scope: String,
    /// The database, as shown in the page header (without credentials).
    pub database: String,
    /// How long a computed throughput chart is reused before it is read again.
    pub chart_ttl: Duration,
    /// Most `list` calls of 1000 jobs per finished state for one chart.
    pub chart_pages: usize,
    /// Jobs per page of a job list.
    pub page_size: usize,
    /// Dead jobs read per chunk of a bulk retry.
    pub bulk_chunk: usize,
    /// Most dead jobs one bulk retry touches.
    pub bulk_limit: usize,
    /// Most `list` calls of 1000 jobs one dedup-key search makes.
    pub search_pages: usize,
}

impl Default for DashboardConfig {
    fn default() -> Self {
        DashboardConfig {
            read_only: false,
            auth_token: None,
            hosts: HostPolicy::Loopback,
            refresh: Duration::from_secs(5),
            cookie_scope: String::new(),
            database: String::new(),
            chart_ttl: Duration::from_secs(30),
            chart_pages: Budget::default().pages,
            page_size: 50,
            bulk_chunk: 500,
            bulk_limit: 50_000,
            search_pages: 10,
        }
    }
}

/// A dashboard over one queue database.
pub struct Dashboard {
    pub(crate) queue: Arc<dyn Queue>,
    pub(crate) config: DashboardConfig,
    pub(crate) sessions: Sessions,
    pub(crate) backend: String,
    chart: tokio::sync::Mutex<Option<(Instant, Arc<Throughput>)>>,
}

impl std::fmt::Debug for Dashboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dashboard")
            .field("backend", &self.backend)
            .field("read_only", &self.config.read_only)
            .field("token", &self.config.auth_token.as_ref().map(|_| "(set)"))
            .finish_non_exhaustive()
    }
}

impl Dashboard {
    /// A dashboard over `queue`.
    pub fn new(queue: Arc<dyn Queue>, config: DashboardConfig) -> Arc<Self> {
        let backend = backend_label(queue.capabilities());
        Arc::new(Dashboard {
            queue,
            config,
            sessions: Sessions::default(),
            backend,
            chart: tokio::sync::Mutex::new(None),
        })
    }

    /// The name of the session cookie.
    pub(crate) fn session_cookie(&self) -> String {
        format!("dbqueue_session{}", self.config.cookie_scope)
    }

    /// The name of the CSRF cookie.
    pub(crate) fn csrf_cookie(&self) -> String {
        format!("dbqueue_csrf{}", self.config.cookie_scope)
    }

    /// The throughput of the last hour, read again once the cached one is older than the
    /// configured TTL. Concurrent callers wait for one computation instead of each reading.
    pub(crate) async fn throughput(&self) -> Result<Arc<Throughput>> {
        let mut cached = self.chart.lock().await;
        if let Some((at, t)) = cached.as_ref() {
            if at.elapsed() < self.config.chart_ttl {
                return Ok(t.clone());
            }
        }
        let now = self.queue.now().await?;
        let budget = Budget {
            pages: self.config.chart_pages,
            ..Budget::default()
        };
        let t = Arc::new(chart::compute(self.queue.as_ref(), now, budget).await?);
        *cached = Some((Instant::now(), t.clone()));
        Ok(t)
    }

    /// Forgets the cached chart (after an action changed jobs).
    pub(crate) async fn forget_chart(&self) {
        *self.chart.lock().await = None;
    }
}

/// `PostgreSQL 15.8`, `SQLite 3.46.0`, `SQL Server 16.0.4135.4`, ...: what the dashboard and
/// `queue serve` show the database as.
fn backend_label(caps: &Capabilities) -> String {
    label(caps.dialect, caps.server_version.as_deref())
}

/// The product name of `dialect`, then the first word of its server's version string, without
/// the product name where the server repeats it (`11.4.3-MariaDB-log` is MariaDB `11.4.3`).
fn label(dialect: Dialect, version: Option<&str>) -> String {
    let name = match dialect {
        Dialect::Sqlite => "SQLite",
        Dialect::Postgres => "PostgreSQL",
        Dialect::MySql => "MySQL",
        Dialect::MariaDb => "MariaDB",
        Dialect::MsSql => "SQL Server",
        Dialect::Memory => "in-memory store",
        _ => "database",
    };
    let version = version
        .map(|v| v.trim_start())
        .map(|v| v.strip_prefix(name).unwrap_or(v))
        .and_then(|v| v.split_whitespace().next())
        .map(|v| before_product(v, name));
    match version {
        Some(v) => format!("{name} {v}"),
        None => name.to_owned(),
    }
}

/// `version` up to where it names the product `name` again after a dash (`11.4.3-MariaDB-log`
/// is `11.4.3`); all of it otherwise (`8.0.11-TiDB-v7.5.0` names another server).
fn before_product<'a>(version: &'a str, name: &str) -> &'a str {
    let marker = format!("-{}", name.to_ascii_lowercase());
    match version.to_ascii_lowercase().find(&marker) {
        Some(at) if at > 0 => &version[..at],
        _ => version,
    }
}

/// The version of the static files, so browsers fetch them again after an upgrade.
pub(crate) const ASSET_VERSION: &str = env!("CARGO_PKG_VERSION");

const APP_CSS: &str = include_str!("../../static/app.css");
const APP_JS: &str = include_str!("../../static/app.js");

async fn app_css() -> impl IntoResponse {
    static_file("text/css; charset=utf-8", APP_CSS)
}

async fn app_js() -> impl IntoResponse {
    static_file("text/javascript; charset=utf-8", APP_JS)
}

fn static_file(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, max-age=3600"),
            ),
        ],
        body,
    )
}

/// Every route of the dashboard, behind its security checks.
pub fn router(app: Arc<Dashboard>) -> Router {
    Router::new()
        .route("/", get(pages::overview))
        .route("/fragment/overview", get(pages::overview_fragment))
        .route("/jobs", get(pages::jobs))
        .route("/jobs/{id}", get(pages::job))
        .route("/jobs/{id}/retry", post(actions::retry))
        .route("/jobs/{id}/cancel", post(actions::cancel))
        .route("/jobs/{id}/reschedule", post(actions::reschedule))
        .route("/actions/retry-dead", post(actions::retry_dead))
        .route("/bulk", get(bulk::confirm))
        .route("/actions/bulk", post(bulk::run))
        .route("/actions/prune", post(actions::prune))
        .route("/actions/pause", post(actions::pause))
        .route("/actions/resume", post(actions::resume))
        .route("/actions/limit", post(actions::limit))
        .route("/actions/rate", post(actions::rate))
        .route("/actions/keys", post(actions::keys))
        .route("/search", get(pages::search))
        .route("/schedules", get(pages::schedules))
        .route("/workflows", get(pages::workflows))
        .route("/workflows/{id}", get(pages::workflow))
        .route("/metrics", get(super::prometheus::metrics))
        .route("/login", get(pages::login).post(actions::login))
        .route("/logout", post(actions::logout))
        .route("/static/app.css", get(app_css))
        .route("/static/app.js", get(app_js))
        .fallback(pages::not_found)
        .layer(from_fn_with_state(app.clone(), security::guard))
        .with_state(app)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dialect_is_labelled_with_its_version() {
        for (dialect, version, want) in [
            (
                Dialect::Postgres,
                "16.4 (Debian 16.4-1.pgdg120+2)",
                "PostgreSQL 16.4",
            ),
            (Dialect::MariaDb, "11.4.3-MariaDB-ubu2404", "MariaDB 11.4.3"),
            (
                Dialect::MariaDb,
                "10.11.6-MariaDB-0+deb12u1",
                "MariaDB 10.11.6",
            ),
            (Dialect::MySql, "8.4.2", "MySQL 8.4.2"),
            (Dialect::MySql, "5.7.44-log", "MySQL 5.7.44-log"),
            // What MySQL reports is kept when it names another server.
            (
                Dialect::MySql,
                "8.0.11-TiDB-v7.5.0",
                "MySQL 8.0.11-TiDB-v7.5.0",
            ),
            (
                Dialect::MsSql,
                "16.0.4135.4 (Standard Edition (64-bit))",
                "SQL Server 16.0.4135.4",
            ),
            // A version string that starts with the product's name does not repeat it.
            (
                Dialect::MsSql,
                "SQL Server 16.0.4135.4 (Standard Edition)",
                "SQL Server 16.0.4135.4",
            ),
            (Dialect::Sqlite, "3.46.0", "SQLite 3.46.0"),
        ] {
            assert_eq!(label(dialect, Some(version)), want, "{version}");
        }
        assert_eq!(label(Dialect::Sqlite, None), "SQLite");
        assert_eq!(label(Dialect::MsSql, Some("")), "SQL Server");
        assert_eq!(label(Dialect::Memory, None), "in-memory store");
    }
}
