//! Where the database servers come from: `QUEUE_TEST_POSTGRES_URL` and `QUEUE_TEST_MYSQL_URL`
//! when set; otherwise containers started through a Docker engine that answers (one container
//! per image per test binary, shared by all its tests); otherwise nothing, with a line that
//! says what is missing.

use std::time::Duration;

#[cfg(any(feature = "postgres", feature = "mysql"))]
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

/// The PostgreSQL servers: `QUEUE_TEST_POSTGRES_URL`, else a PostgreSQL 16 container.
#[cfg(feature = "postgres")]
pub async fn postgres() -> Discovery {
    if let Some(url) = env_url("QUEUE_TEST_POSTGRES_URL") {
        return Discovery::Servers(vec![Server {
            label: "QUEUE_TEST_POSTGRES_URL".into(),
            url,
        }]);
    }
    if !docker_answers().await {
        return Discovery::Missing("set QUEUE_TEST_POSTGRES_URL or start Docker".into());
    }
    match containers::postgres().await {
        Ok(url) => Discovery::Servers(vec![Server {
            label: "postgres:16 container".into(),
            url,
        }]),
        Err(e) => Discovery::Missing(format!(
            "Docker answers but the postgres container did not start ({e}); set QUEUE_TEST_POSTGRES_URL"
        )),
    }
}

/// The MySQL servers: `QUEUE_TEST_MYSQL_URL`, else both a MySQL 8.4 and a MariaDB 11
/// container (every case runs on each).
#[cfg(feature = "mysql")]
pub async fn mysql() -> Discovery {
    if let Some(url) = env_url("QUEUE_TEST_MYSQL_URL") {
        return Discovery::Servers(vec![Server {
            label: "QUEUE_TEST_MYSQL_URL".into(),
            url,
        }]);
    }
    if !docker_answers().await {
        return Discovery::Missing("set QUEUE_TEST_MYSQL_URL or start Docker".into());
    }
    let mut servers = Vec::new();
    for (label, started) in [
        ("mysql:8.4 container", containers::mysql().await),
        ("mariadb:11 container", containers::mariadb().await),
    ] {
        match started {
            Ok(url) => servers.push(Server {
                label: label.into(),
                url,
            }),
            Err(e) => {
                return Discovery::Missing(format!(
                    "Docker answers but the {label} did not start ({e}); set QUEUE_TEST_MYSQL_URL"
                ))
            }
        }
    }
    Discovery::Servers(servers)
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
fn env_url(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
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
    use std::future::Future;
    use std::sync::{Mutex, OnceLock};

    use tokio::sync::OnceCell;

    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    static KEEP: Mutex<Vec<Box<dyn Any + Send>>> = Mutex::new(Vec::new());

    async fn on_container_runtime<F>(fut: F) -> Result<String, String>
    where
        F: Future<Output = Result<String, String>> + Send + 'static,
    {
        let rt = RUNTIME.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .ok()
        });
        match rt {
            Some(rt) => rt
                .spawn(fut)
                .await
                .unwrap_or_else(|e| Err(format!("container task failed: {e}"))),
            None => Err("could not start a runtime for containers".into()),
        }
    }

    fn keep(c: impl Any + Send) {
        KEEP.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::new(c));
    }

    #[cfg(feature = "postgres")]
    pub(super) async fn postgres() -> Result<String, String> {
        static URL: OnceCell<Result<String, String>> = OnceCell::const_new();
        URL.get_or_init(|| {
            on_container_runtime(async {
                use testcontainers_modules::postgres::Postgres;
                use testcontainers_modules::testcontainers::{runners::AsyncRunner, ImageExt};
                let c = Postgres::default()
                    .with_host_auth()
                    .with_tag("16-alpine")
                    .start()
                    .await
                    .map_err(|e| e.to_string())?;
                let host = c.get_host().await.map_err(|e| e.to_string())?;
                let port = c
                    .get_host_port_ipv4(5432)
                    .await
                    .map_err(|e| e.to_string())?;
                keep(c);
                Ok(format!("postgres://postgres@{host}:{port}/postgres"))
            })
        })
        .await
        .clone()
    }

    #[cfg(feature = "mysql")]
    pub(super) async fn mysql() -> Result<String, String> {
        static URL: OnceCell<Result<String, String>> = OnceCell::const_new();
        URL.get_or_init(|| {
            on_container_runtime(async {
                use testcontainers_modules::mysql::Mysql;
                use testcontainers_modules::testcontainers::{runners::AsyncRunner, ImageExt};
                let c = Mysql::default()
                    .with_tag("8.4")
                    .start()
                    .await
                    .map_err(|e| e.to_string())?;
                let host = c.get_host().await.map_err(|e| e.to_string())?;
                let port = c
                    .get_host_port_ipv4(3306)
                    .await
                    .map_err(|e| e.to_string())?;
                keep(c);
                Ok(format!("mysql://root@{host}:{port}/test"))
            })
        })
        .await
        .clone()
    }

    #[cfg(feature = "mysql")]
    pub(super) async fn mariadb() -> Result<String, String> {
        static URL: OnceCell<Result<String, String>> = OnceCell::const_new();
        URL.get_or_init(|| {
            on_container_runtime(async {
                use testcontainers_modules::mariadb::Mariadb;
                use testcontainers_modules::testcontainers::{runners::AsyncRunner, ImageExt};
                let c = Mariadb::default()
                    .with_tag("11.4")
                    .start()
                    .await
                    .map_err(|e| e.to_string())?;
                let host = c.get_host().await.map_err(|e| e.to_string())?;
                let port = c
                    .get_host_port_ipv4(3306)
                    .await
                    .map_err(|e| e.to_string())?;
                keep(c);
                Ok(format!("mysql://root@{host}:{port}/test"))
            })
        })
        .await
        .clone()
    }
}
