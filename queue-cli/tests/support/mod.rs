//! Shared by the dashboard's test programs: the backends to run on, an isolated queue per test,
//! jobs in every state, an in-process HTTP client, and a runner that turns cases into libtest
//! trials. A case whose server is missing is reported as ignored, with the reason, or fails
//! when `QUEUE_TEST_REQUIRE` names that server.
#![allow(dead_code)] // each test program uses its own part

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, ensure, Context as _};
use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::Router;
use dbqueue::{Dep, Failure, JobId, Lease, NewJob, PopRequest, PushedWorkflow, Queue, Workflow};
use libtest_mimic::{Completion, Failed, Trial};
use tower::ServiceExt as _;

/// A database the cases run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
    MySql,
}

impl Backend {
    pub(crate) const ALL: [Backend; 3] = [Backend::Sqlite, Backend::Postgres, Backend::MySql];

    /// As `QUEUE_TEST_REQUIRE` spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
            Backend::MySql => "mysql",
        }
    }

    /// The server's URL (`None` for SQLite, which needs none), or why there is none.
    pub(crate) fn server(self) -> Result<Option<String>, String> {
        let var = match self {
            Backend::Sqlite => return Ok(None),
            Backend::Postgres => "QUEUE_TEST_POSTGRES_URL",
            Backend::MySql => "QUEUE_TEST_MYSQL_URL",
        };
        match std::env::var(var) {
            Ok(url) if !url.trim().is_empty() => Ok(Some(url.trim().to_owned())),
            _ => Err(format!("{var} is not set")),
        }
    }
}

/// Whether `QUEUE_TEST_REQUIRE` names `what` (a missing server or browser is then a failure).
pub(crate) fn required(what: &str) -> bool {
    std::env::var("QUEUE_TEST_REQUIRE")
        .map(|v| v.split(',').any(|b| b.trim().eq_ignore_ascii_case(what)))
        .unwrap_or(false)
}

fn random_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

/// An isolated, migrated namespace (a file, a schema or a table prefix) and a queue on it.
pub(crate) struct Fixture {
    pub(crate) backend: Backend,
    pub(crate) queue: Arc<dyn Queue>,
    /// What the `queue` command needs to open the same namespace.
    pub(crate) url: String,
    pub(crate) args: Vec<String>,
    cleanup: Cleanup,
    _dir: Option<tempfile::TempDir>,
}

enum Cleanup {
    Nothing,
    Postgres(Arc<dbqueue::PostgresQueue>),
    MySql(Arc<dbqueue::MySqlQueue>),
}

impl Fixture {
    pub(crate) async fn new(backend: Backend, server: Option<&str>) -> anyhow::Result<Fixture> {
        let fx = match (backend, server) {
            (Backend::Sqlite, _) => {
                let dir = tempfile::tempdir()?;
                let url = format!("sqlite://{}", dir.path().join("dashboard.db").display());
                let queue = dbqueue::connect(&url).await?;
                Fixture {
                    backend,
                    queue,
                    url,
                    args: Vec::new(),
                    cleanup: Cleanup::Nothing,
                    _dir: Some(dir),
                }
            }
            (Backend::Postgres, Some(url)) => {
                let schema = format!("dash_{}", random_suffix());
                let queue = Arc::new(
                    dbqueue::PostgresQueue::builder(url)
                        .schema(schema.as_str())
                        .max_connections(4)
                        .connect()
                        .await?,
                );
                Fixture {
                    backend,
                    queue: queue.clone(),
                    url: url.to_owned(),
                    args: vec!["--schema".into(), schema],
                    cleanup: Cleanup::Postgres(queue),
                    _dir: None,
                }
            }
            (Backend::MySql, Some(url)) => {
                let prefix = format!("dash{}_", random_suffix());
                let queue = Arc::new(
                    dbqueue::MySqlQueue::builder(url)
                        .table_prefix(prefix.as_str())
                        .max_connections(4)
                        .connect()
                        .await?,
                );
                Fixture {
                    backend,
                    queue: queue.clone(),
                    url: url.to_owned(),
                    args: vec!["--table-prefix".into(), prefix],
                    cleanup: Cleanup::MySql(queue),
                    _dir: None,
                }
            }
            (_, None) => return Err(anyhow!("{} needs a server URL", backend.name())),
        };
        fx.queue.migrate().await?;
        Ok(fx)
    }

    /// Drops the namespace.
    pub(crate) async fn teardown(&self) -> anyhow::Result<()> {
        match &self.cleanup {
            Cleanup::Nothing => {}
            Cleanup::Postgres(q) => {
                // The schema name is a checked identifier this file made.
                let drop = format!("DROP SCHEMA IF EXISTS {} CASCADE", q.schema());
                sqlx::query(sqlx::AssertSqlSafe(drop))
                    .execute(q.pool())
                    .await?;
                q.pool().close().await;
            }
            Cleanup::MySql(q) => {
                q.drop_tables().await?;
                q.pool().close().await;
            }
        }
        Ok(())
    }
}

/// A case: gets its own fixture, which is dropped afterwards whatever the outcome.
pub(crate) type Case = fn(Arc<Fixture>) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

/// `(name, case)`, for a list of cases.
#[allow(unused_macros)]
macro_rules! case {
    ($f:ident) => {
        (stringify!($f), (|fx| Box::pin($f(fx))) as support::Case)
    };
}

/// A runtime for one trial.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failed> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(format!("cannot start a runtime: {e}")))
}

/// Runs `case` on a fresh fixture of `backend`.
pub(crate) fn run_case(backend: Backend, server: Option<String>, case: Case) -> Result<(), Failed> {
    runtime()?.block_on(async move {
        let fx = Arc::new(
            Fixture::new(backend, server.as_deref())
                .await
                .map_err(|e| Failed::from(format!("fixture: {e:#}")))?,
        );
        let outcome = tokio::spawn(case(fx.clone())).await;
        let teardown = fx.teardown().await;
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Failed::from(format!("{e:#}"))),
            Err(panic) => return Err(Failed::from(format!("the case panicked: {panic}"))),
        }
        teardown.map_err(|e| Failed::from(format!("teardown: {e:#}")))
    })
}

/// One trial per case and backend, named `<backend>::<case>`. Where a backend's server is
/// missing its trials are ignored (and one line says why), unless `QUEUE_TEST_REQUIRE` names
/// it: then they fail with the reason.
pub(crate) fn backend_trials(cases: &[(&'static str, Case)]) -> Vec<Trial> {
    let mut trials = Vec::new();
    for backend in Backend::ALL {
        let server = backend.server();
        if let Err(why) = &server {
            if !required(backend.name()) {
                println!(
                    "note: the {} cases are ignored: {why} (QUEUE_TEST_REQUIRE={} makes this a \
                     failure)",
                    backend.name(),
                    backend.name()
                );
            }
        }
        for &(name, case) in cases {
            let trial_name = format!("{}::{name}", backend.name());
            let trial = match &server {
                Ok(url) => {
                    let url = url.clone();
                    Trial::test(trial_name, move || run_case(backend, url, case))
                }
                Err(why) if required(backend.name()) => {
                    let message = format!(
                        "{} is required by QUEUE_TEST_REQUIRE but missing: {why}",
                        backend.name()
                    );
                    Trial::test(trial_name, move || Err(Failed::from(message)))
                }
                Err(why) => {
                    let why = why.clone();
                    Trial::ignorable_test(trial_name, move || Ok(Completion::ignored_with(why)))
                }
            };
            trials.push(trial);
        }
    }
    trials
}

/// `value` percent-encoded for a query string.
pub(crate) fn query_value(value: &str) -> String {
    serde_urlencoded::to_string([("v", value)]).unwrap_or_default()[2..].to_owned()
}

/// Pushes a job with `payload` (JSON text) to `queue`.
pub(crate) async fn push(q: &dyn Queue, queue: &str, payload: &str) -> anyhow::Result<JobId> {
    Ok(q.push(NewJob::from_json(queue, payload)?).await?)
}

/// Claims the job `id`, which must be the first due job of its queue (it is pushed with the
/// highest priority to make sure).
async fn claim(q: &dyn Queue, queue: &str, id: JobId, worker: &str) -> anyhow::Result<Lease> {
    let leased = q
        .pop(
            PopRequest::new(queue)
                .worker(worker)
                .lease(Duration::from_secs(300)),
        )
        .await?;
    let got = leased.into_iter().next().context("pop found nothing")?;
    ensure!(
        got.job.id == id,
        "pop claimed {} instead of {id}",
        got.job.id
    );
    Ok(got.lease)
}

/// A running job, claimed by `worker`.
pub(crate) async fn running(
    q: &dyn Queue,
    queue: &str,
    payload: &str,
    worker: &str,
) -> anyhow::Result<JobId> {
    let id = q
        .push(NewJob::from_json(queue, payload)?.priority(i32::MAX))
        .await?;
    claim(q, queue, id, worker).await?;
    Ok(id)
}

/// A completed job.
pub(crate) async fn completed(q: &dyn Queue, queue: &str, payload: &str) -> anyhow::Result<JobId> {
    let id = q
        .push(NewJob::from_json(queue, payload)?.priority(i32::MAX))
        .await?;
    let lease = claim(q, queue, id, "test-worker").await?;
    q.ack(&lease).await?;
    Ok(id)
}

/// A dead job whose last error is `error`.
pub(crate) async fn dead(
    q: &dyn Queue,
    queue: &str,
    payload: &str,
    error: &str,
) -> anyhow::Result<JobId> {
    dead_job(q, NewJob::from_json(queue, payload)?, error).await
}

/// `job` pushed, claimed and failed for good with `error`.
pub(crate) async fn dead_job(q: &dyn Queue, job: NewJob, error: &str) -> anyhow::Result<JobId> {
    let queue = job.queue().to_owned();
    let id = q.push(job.priority(i32::MAX)).await?;
    let lease = claim(q, &queue, id, "test-worker").await?;
    q.fail(&lease, Failure::permanent(error)).await?;
    Ok(id)
}

/// A cancelled job.
pub(crate) async fn cancelled(q: &dyn Queue, queue: &str, payload: &str) -> anyhow::Result<JobId> {
    let id = push(q, queue, payload).await?;
    q.cancel(id).await?;
    Ok(id)
}

/// A workflow named `name` of four steps in `queue` (which must have no other due job), left
/// with a job in each of four states: `fetch` dead with `error`; `resize` (after `fetch`)
/// cancelled because of it; `cleanup` (after `fetch`, whatever its outcome) pending; `report`
/// (after `resize` whatever its outcome, and after `cleanup`) waiting.
pub(crate) async fn album(
    q: &dyn Queue,
    queue: &str,
    name: &str,
    error: &str,
) -> anyhow::Result<PushedWorkflow> {
    let job = |kind: &str| -> anyhow::Result<NewJob> {
        Ok(NewJob::from_json(queue, "{\"album\":42}")?.kind(kind))
    };
    let wf = Workflow::new()
        .name(name)
        .add("fetch", job("media.fetch")?)
        .add_after("resize", job("media.resize")?, ["fetch"])
        .add_after(
            "cleanup",
            job("media.cleanup")?,
            [Dep::on("fetch").run_anyway()],
        )
        .add_after(
            "report",
            job("media.report")?,
            [Dep::on("resize").run_anyway(), Dep::on("cleanup")],
        );
    let pushed = q.push_workflow(wf).await?;
    let fetch = pushed.job("fetch").context("a fetch step")?;
    let lease = claim(q, queue, fetch, "test-worker").await?;
    q.fail(&lease, Failure::permanent(error)).await?;
    Ok(pushed)
}

/// What a request got back.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

impl Page {
    /// Fails unless the status is `status`.
    pub(crate) fn expect(self, status: StatusCode) -> anyhow::Result<Page> {
        ensure!(
            self.status == status,
            "expected {status}, got {}: {}",
            self.status,
            self.body.chars().take(2000).collect::<String>()
        );
        Ok(self)
    }

    /// Fails unless the body contains `text`.
    pub(crate) fn has(&self, text: &str) -> anyhow::Result<&Page> {
        ensure!(
            self.body.contains(text),
            "the page lacks {text:?}: {}",
            self.body.chars().take(4000).collect::<String>()
        );
        Ok(self)
    }

    /// Fails if the body contains `text`.
    pub(crate) fn lacks(&self, text: &str) -> anyhow::Result<&Page> {
        ensure!(
            !self.body.contains(text),
            "the page has {text:?}: {}",
            self.body.chars().take(4000).collect::<String>()
        );
        Ok(self)
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A client of the dashboard's router, in process, that keeps cookies like a browser and
/// sends forms as the dashboard's own pages do (with the CSRF token and the same origin).
pub(crate) struct Client {
    router: Router,
    pub(crate) host: String,
    cookies: HashMap<String, String>,
    /// Sent as `Authorization: Bearer` when set.
    pub(crate) bearer: Option<String>,
}

impl Client {
    pub(crate) fn new(router: Router) -> Client {
        Client {
            router,
            host: "127.0.0.1:8787".to_owned(),
            cookies: HashMap::new(),
            bearer: None,
        }
    }

    /// The CSRF token the dashboard gave this client.
    pub(crate) fn csrf(&self) -> String {
        self.cookies
            .iter()
            .find(|(k, _)| k.starts_with("dbqueue_csrf"))
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    pub(crate) fn has_cookie(&self, prefix: &str) -> bool {
        self.cookies.keys().any(|k| k.starts_with(prefix))
    }

    /// Sends `req` with this client's host, cookies and bearer token; keeps the cookies set.
    pub(crate) async fn send(&mut self, mut req: Request<Body>) -> anyhow::Result<Page> {
        let h = req.headers_mut();
        if !h.contains_key(header::HOST) {
            h.insert(header::HOST, self.host.parse()?);
        }
        if !self.cookies.is_empty() && !h.contains_key(header::COOKIE) {
            let jar: Vec<String> = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            h.insert(header::COOKIE, jar.join("; ").parse()?);
        }
        if let Some(token) = &self.bearer {
            h.insert(header::AUTHORIZATION, format!("Bearer {token}").parse()?);
        }
        let response = self.router.clone().oneshot(req).await?;
        let status = response.status();
        let headers = response.headers().clone();
        for set in headers.get_all(header::SET_COOKIE) {
            let set = set.to_str()?;
            let pair = set.split(';').next().unwrap_or_default();
            if let Some((k, v)) = pair.split_once('=') {
                if set.contains("Max-Age=0") {
                    self.cookies.remove(k);
                } else {
                    self.cookies.insert(k.to_owned(), v.to_owned());
                }
            }
        }
        let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024).await?;
        Ok(Page {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }

    pub(crate) async fn get(&mut self, path: &str) -> anyhow::Result<Page> {
        self.send(Request::get(path).body(Body::empty())?).await
    }

    /// POSTs `fields` and the CSRF token from the same origin, as the dashboard's forms do.
    pub(crate) async fn post(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
    ) -> anyhow::Result<Page> {
        let csrf = self.csrf();
        let mut all: Vec<(&str, &str)> = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        let origin = format!("http://{}", self.host);
        self.post_raw(path, &all, &[("origin", origin.as_str())])
            .await
    }

    /// POSTs exactly `fields` with exactly `headers` (beyond host, cookies and bearer).
    pub(crate) async fn post_raw(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> anyhow::Result<Page> {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body = serde_urlencoded::to_string(fields)?;
        self.send(req.body(Body::from(body))?).await
    }
}
