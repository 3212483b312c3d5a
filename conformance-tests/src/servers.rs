//! Where the database servers come from: `QUEUE_TEST_POSTGRES_URL` and `QUEUE_TEST_MYSQL_URL`
//! when set; otherwise containers started through a Docker engine that answers (one container
//! per image per test binary, shared by all its tests); otherwise nothing, with a line that
//! says what is missing.
//!
//! The distributed engines tested on their own (CockroachDB, YugabyteDB, TiDB) come the same
//! way, from `QUEUE_TEST_COCKROACHDB_URL`, `QUEUE_TEST_YUGABYTEDB_URL` and `QUEUE_TEST_TIDB_URL`
//! or from their images, started as they are published.

use std::time::Duration;

use crate::harness::{Discovery, Server};

/// Whether a Docker engine answers a ping within a second (`DOCKER_HOST`, else the default
/// socket). Never hangs.
pub async fn docker_answers() -> bool {
    tokio::time::timeout(Duration::from_secs(2), ping_docker())
        .await
        .unwrap_or(false)
}

async fn ping_docker() -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const PING: &[u8] = b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n";
    let host = std::env::var("DOCKER_HOST").unwrap_or_default();
    let mut response = Vec::new();
    if let Some(addr) = host.strip_prefix("tcp://") {
        let Ok(mut s) = tokio::net::TcpStream::connect(addr.trim_end_matches('/')).await else {
            return false;
        };
        if s.write_all(PING).await.is_err() {
            return false;
        }
        let _ = s.read_to_end(&mut response).await;
    } else {
        #[cfg(unix)]
        {
            let path = match host.strip_prefix("unix://") {
                Some(p) => p.to_owned(),
                None if host.is_empty() => "/var/run/docker.sock".to_owned(),
                None => return false,
            };
            let Ok(mut s) = tokio::net::UnixStream::connect(&path).await else {
                return false;
            };
            if s.write_all(PING).await.is_err() {
                return false;
            }
            let _ = s.read_to_end(&mut response).await;
        }
    }
    let text = String::from_utf8_lossy(&response);
    text.starts_with("HTTP/1.") && text.lines().next().is_some_and(|l| l.contains(" 200"))
}

/// A container that started, as a URL, or why it did not.
type Started = Result<String, String>;

/// The servers of a backend: the URL in `var` when set; otherwise the containers `start`s,
/// when a Docker engine answers (every case then runs on each); otherwise what is missing.
async fn discover<F>(var: &str, start: F) -> Discovery
where
    F: FnOnce() -> Vec<(
        &'static str,
        std::pin::Pin<Box<dyn std::future::Future<Output = Started> + Send>>,
    )>,
{
    if let Some(url) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
        return Discovery::Servers(vec![Server::new(var, url)]);
    }
    if !docker_answers().await {
        return Discovery::Missing(format!("set {var} or start Docker"));
    }
    let mut servers = Vec::new();
    for (label, started) in start() {
        match started.await {
            Ok(url) => servers.push(Server::new(label, url)),
            Err(e) => {
                return Discovery::Missing(format!(
                    "Docker answers but the {label} did not start ({e}); set {var}"
                ))
            }
        }
    }
    Discovery::Servers(servers)
}

/// The PostgreSQL servers: `QUEUE_TEST_POSTGRES_URL`, else a PostgreSQL 16 container.
#[cfg(feature = "postgres")]
pub async fn postgres() -> Discovery {
    use testcontainers_modules::postgres::Postgres;
    use testcontainers_modules::testcontainers::ImageExt;
    discover("QUEUE_TEST_POSTGRES_URL", || {
        vec![(
            "postgres:16 container",
            Box::pin(containers::start(
                "postgres:16",
                Postgres::default().with_host_auth().with_tag("16-alpine"),
                5432,
                |host, port| format!("postgres://postgres@{host}:{port}/postgres"),
            )) as _,
        )]
    })
    .await
}

/// The MySQL servers: `QUEUE_TEST_MYSQL_URL`, else both a MySQL 8.4 and a MariaDB 11
/// container (every case runs on each).
#[cfg(feature = "mysql")]
pub async fn mysql() -> Discovery {
    use testcontainers_modules::mariadb::Mariadb;
    use testcontainers_modules::mysql::Mysql;
    use testcontainers_modules::testcontainers::ImageExt;
    let url = |host: &str, port: u16| format!("mysql://root@{host}:{port}/test");
    discover("QUEUE_TEST_MYSQL_URL", || {
        vec![
            (
                "mysql:8.4 container",
                Box::pin(containers::start(
                    "mysql:8.4",
                    Mysql::default().with_tag("8.4"),
                    3306,
                    url,
                )) as _,
            ),
            (
                "mariadb:11 container",
                Box::pin(containers::start(
                    "mariadb:11",
                    Mariadb::default().with_tag("11.4"),
                    3306,
                    url,
                )) as _,
            ),
        ]
    })
    .await
}

/// A database image started as it is published, with no module of testcontainers-modules:
/// what it runs, the port that serves SQL, the line of its output that says it is up, and what
/// makes the URL once it is.
#[cfg(any(feature = "postgres", feature = "mysql"))]
struct Plain {
    /// `name:tag`; also the key of its one container per test binary.
    image: &'static str,
    /// Names the container in messages.
    label: &'static str,
    /// The arguments it runs with (none: the image's own).
    cmd: &'static [&'static str],
    /// The port that serves SQL.
    port: u16,
    /// The line (on stdout or stderr) after which it takes connections.
    ready: &'static str,
    /// How long starting may take until `ready` appears (the image is pulled before).
    startup: Duration,
    /// Its URL, from its host and the port mapped to `port`.
    url: fn(&str, u16) -> String,
    /// Waits until the server answers at the URL and prepares what the URL names (a
    /// database); returns the URL the tests use.
    prepare: fn(String) -> std::pin::Pin<Box<dyn std::future::Future<Output = Started> + Send>>,
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl Plain {
    /// The servers of an engine tested on its own: the URL in `var` when set, else this
    /// image's container.
    async fn discover(&'static self, var: &str) -> Discovery {
        discover(var, || vec![(self.label, Box::pin(self.start()) as _)]).await
    }

    async fn start(&'static self) -> Started {
        use testcontainers_modules::testcontainers::core::{IntoContainerPort, WaitFor};
        use testcontainers_modules::testcontainers::{GenericImage, ImageExt};
        let (name, tag) = self.image.split_once(':').unwrap_or((self.image, "latest"));
        let request = GenericImage::new(name, tag)
            .with_exposed_port(self.port.tcp())
            .with_wait_for(WaitFor::message_on_either_std(self.ready))
            .with_cmd(self.cmd.iter().copied())
            .with_startup_timeout(self.startup);
        let url = containers::start(self.image, request, self.port, self.url).await?;
        (self.prepare)(url).await
    }
}

/// Runs `probe` every half second (each try at most five seconds) until it succeeds or
/// `within` has passed: a server may print that it is up a moment before it answers queries.
#[cfg(any(feature = "postgres", feature = "mysql"))]
async fn until_answers<F, Fut>(within: Duration, mut probe: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), sqlx::Error>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let error = match tokio::time::timeout(Duration::from_secs(5), probe()).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "no answer within 5 s".to_owned(),
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("not answering after {within:?}: {error}"));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until the PostgreSQL-protocol server at `url` answers `SELECT 1`.
#[cfg(feature = "postgres")]
fn pg_answers(url: String) -> std::pin::Pin<Box<dyn std::future::Future<Output = Started> + Send>> {
    Box::pin(async move {
        until_answers(Duration::from_secs(60), || async {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&url).await?;
            sqlx::raw_sql("SELECT 1").execute(&mut conn).await?;
            conn.close().await
        })
        .await?;
        Ok(url)
    })
}

/// CockroachDB: `QUEUE_TEST_COCKROACHDB_URL`, else one insecure node of
/// `cockroachdb/cockroach:v24.3.5` (`start-single-node --insecure`: user `root` without a
/// password, database `defaultdb`, no TLS). It is up once it prints `CockroachDB node starting
/// at`, the line testcontainers-modules' own CockroachDB module waits for.
#[cfg(feature = "postgres")]
pub async fn cockroachdb() -> Discovery {
    static NODE: Plain = Plain {
        image: "cockroachdb/cockroach:v24.3.5",
        label: "cockroachdb/cockroach:v24.3.5 container",
        cmd: &["start-single-node", "--insecure"],
        port: 26257,
        ready: "CockroachDB node starting at",
        startup: Duration::from_secs(120),
        url: |host, port| format!("postgres://root@{host}:{port}/defaultdb?sslmode=disable"),
        prepare: pg_answers,
    };
    NODE.discover("QUEUE_TEST_COCKROACHDB_URL").await
}

/// YugabyteDB (YSQL): `QUEUE_TEST_YUGABYTEDB_URL`, else `yugabytedb/yugabyte:2.20.7.0-b2`
/// running `bin/yugabyted start --background=false` (YSQL on 5433, user and database
/// `yugabyte`). It is up once yugabyted prints `YugabyteDB Started` (what testcontainers-go's
/// YugabyteDB module waits for); YSQL may take a moment more, so `SELECT 1` is awaited too, as
/// testcontainers-java's module does. The URL carries the default password `yugabyte`, which a
/// server without authentication (yugabyted's default) ignores.
#[cfg(feature = "postgres")]
pub async fn yugabytedb() -> Discovery {
    static NODE: Plain = Plain {
        image: "yugabytedb/yugabyte:2.20.7.0-b2",
        label: "yugabytedb/yugabyte:2.20.7.0-b2 container",
        cmd: &["bin/yugabyted", "start", "--background=false"],
        port: 5433,
        ready: "YugabyteDB Started",
        startup: Duration::from_secs(240),
        url: |host, port| {
            format!("postgres://yugabyte:yugabyte@{host}:{port}/yugabyte?sslmode=disable")
        },
        prepare: pg_answers,
    };
    NODE.discover("QUEUE_TEST_YUGABYTEDB_URL").await
}

/// TiDB: `QUEUE_TEST_TIDB_URL` (its database must exist), else `pingcap/tidb:v8.5.1` as
/// published (a single server on its embedded store; user `root` without a password). It is
/// up once it logs `server is running MySQL protocol`, which TiDB writes when its MySQL
/// listener is open, after bootstrapping; then the database `test` is created (through the
/// `mysql` database) if the image did not.
#[cfg(feature = "mysql")]
pub async fn tidb() -> Discovery {
    static SERVER: Plain = Plain {
        image: "pingcap/tidb:v8.5.1",
        label: "pingcap/tidb:v8.5.1 container",
        cmd: &[],
        port: 4000,
        ready: "server is running MySQL protocol",
        startup: Duration::from_secs(120),
        url: |host, port| format!("mysql://root@{host}:{port}"),
        prepare: |server| {
            Box::pin(async move {
                let admin = format!("{server}/mysql");
                until_answers(Duration::from_secs(60), || async {
                    use sqlx::Connection;
                    let mut conn = sqlx::MySqlConnection::connect(&admin).await?;
                    sqlx::raw_sql("CREATE DATABASE IF NOT EXISTS test")
                        .execute(&mut conn)
                        .await?;
                    conn.close().await
                })
                .await?;
                Ok(format!("{server}/test"))
            })
        },
    };
    SERVER.discover("QUEUE_TEST_TIDB_URL").await
}

/// A short random lowercase name part, for schemas and table prefixes.
pub fn random_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
mod containers {
    //! Containers live on a runtime of their own that outlives every test's runtime, and stay up
    //! until the test binary exits.

    use std::any::Any;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};

    use testcontainers_modules::testcontainers::runners::AsyncRunner;
    use testcontainers_modules::testcontainers::Image;
    use tokio::sync::OnceCell;

    use super::Started;

    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    static KEEP: Mutex<Vec<Box<dyn Any + Send>>> = Mutex::new(Vec::new());
    /// One start per container key, shared by every test of the binary.
    type Starts = HashMap<&'static str, Arc<OnceCell<Started>>>;
    static STARTED: Mutex<Option<Starts>> = Mutex::new(None);

    /// Starts the container `request` once per test binary (later calls with the same `key`
    /// get the first one's URL), and makes its URL from its host and the port mapped to `port`.
    pub(super) async fn start<I, R>(
        key: &'static str,
        request: R,
        port: u16,
        url: fn(&str, u16) -> String,
    ) -> Started
    where
        I: Image + 'static,
        R: AsyncRunner<I> + Send + 'static,
    {
        let cell = STARTED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .entry(key)
            .or_default()
            .clone();
        cell.get_or_init(|| async move {
            let rt = RUNTIME.get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .ok()
            });
            let Some(rt) = rt else {
                return Err("could not start a runtime for containers".into());
            };
            rt.spawn(async move {
                let c = request.start().await.map_err(|e| e.to_string())?;
                let host = c.get_host().await.map_err(|e| e.to_string())?;
                let mapped = c
                    .get_host_port_ipv4(port)
                    .await
                    .map_err(|e| e.to_string())?;
                KEEP.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Box::new(c));
                Ok(url(&host.to_string(), mapped))
            })
            .await
            .unwrap_or_else(|e| Err(format!("container task failed: {e}")))
        })
        .await
        .clone()
    }
}
