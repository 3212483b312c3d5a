//! Where the database servers come from: `QUEUE_TEST_POSTGRES_URL` and `QUEUE_TEST_MYSQL_URL`
//! when set; otherwise containers started through a Docker engine that answers (one container
//! per image per test binary, shared by all its tests); otherwise nothing, with a line that
//! says what is missing.

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
        return Discovery::Servers(vec![Server {
            label: var.to_owned(),
            url,
        }]);
    }
    if !docker_answers().await {
        return Discovery::Missing(format!("set {var} or start Docker"));
    }
    let mut servers = Vec::new();
    for (label, started) in start() {
        match started.await {
            Ok(url) => servers.push(Server {
                label: label.into(),
                url,
            }),
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
