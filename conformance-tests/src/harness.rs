//! What a backend provides to the suite ([`Harness`], [`Fixture`], [`Transactions`]) and what
//! sets up, runs and tears down one case ([`run_on`]).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use queue_core::{ClaimStrategy, JobId, JobState, Lease, Limits, NewJob, Queue, RetryPolicy};

/// The settings a case asks for when it makes a queue.
#[derive(Clone, Debug)]
pub struct TestConfig {
    /// The claim strategy under test.
    pub claim: ClaimStrategy,
    /// The retry policy of the queue (fast by default, so retries happen within a test).
    pub retry: RetryPolicy,
    /// The size limits of the queue.
    pub limits: Limits,
    /// Whether completed jobs stay in the table (the builders' `keep_completed_jobs`).
    pub keep_completed: bool,
}

impl TestConfig {
    /// The defaults of the suite for `claim`: retries after 100 ms doubling to at most 2 s with
    /// ±10 % jitter; payloads up to 2 MiB, batches up to 500 jobs, pops up to 100 jobs.
    pub fn new(claim: ClaimStrategy) -> Self {
        TestConfig {
            claim,
            retry: RetryPolicy {
                base: Duration::from_millis(100),
                factor: 2.0,
                max: Duration::from_secs(2),
                jitter: 0.1,
            },
            limits: Limits {
                max_payload_bytes: 2 * 1024 * 1024,
                max_batch: 500,
                max_pop: 100,
                ..Limits::default()
            },
            keep_completed: true,
        }
    }
}

/// A database server the cases of one backend run against.
#[derive(Clone, Debug)]
pub struct Server {
    /// Names the server in messages, e.g. `mysql:8.4` or `QUEUE_TEST_POSTGRES_URL`.
    pub label: String,
    /// Its URL (empty for SQLite, which needs no server).
    pub url: String,
    /// Why no case can run here although the server was found (the backend could not prepare
    /// it as the cases need, e.g. a setting the server refuses): every case is then reported
    /// as ignored with this reason, never as passed, and still runs on the other servers.
    /// `None` for a server that is ready.
    pub unusable: Option<String>,
}

impl Server {
    /// A server that is ready for the cases.
    pub fn new(label: impl Into<String>, url: impl Into<String>) -> Self {
        Server {
            label: label.into(),
            url: url.into(),
            unusable: None,
        }
    }
}

/// Where the servers of a backend come from, or why there are none.
#[derive(Clone, Debug)]
pub enum Discovery {
    /// Run every case against each of these.
    Servers(Vec<Server>),
    /// No server: this says what is missing (e.g. `set QUEUE_TEST_POSTGRES_URL or start Docker`).
    Missing(String),
}

/// One backend with one claim strategy, as the suite sees it. Each backend's test file
/// implements it and hands it to [`suite!`](crate::suite).
#[async_trait]
pub trait Harness: Send + Sync + 'static {
    /// The backend's name as `QUEUE_TEST_REQUIRE` spells it: `sqlite`, `postgres`, `mysql`.
    fn backend(&self) -> &'static str;

    /// The claim strategy under test.
    fn claim(&self) -> ClaimStrategy;

    /// How many concurrent poppers the concurrency case runs (at least 16).
    fn poppers(&self) -> usize {
        16
    }

    /// Finds the servers to run against.
    async fn servers(&self) -> Discovery;

    /// Makes a fresh, isolated (own file, schema or table prefix) queue on `server`, migrated
    /// when `migrate` (otherwise nothing exists in its namespace yet).
    async fn fixture(
        &self,
        server: &Server,
        config: &TestConfig,
        migrate: bool,
    ) -> anyhow::Result<Box<dyn Fixture>>;

    /// Connects a queue to a database that cannot be reached. Either this returns
    /// `Err(Unavailable)` or every later call on the returned queue does. `Ok(None)` where the
    /// backend has no database that could be out of reach (its jobs live in the test's own
    /// process): the case that needs one does not apply there.
    async fn unreachable(&self, config: &TestConfig) -> queue_core::Result<Option<Arc<dyn Queue>>>;
}

/// One isolated, migrated namespace (file, schema, table prefix) and a queue on it.
#[async_trait]
pub trait Fixture: Send + Sync + 'static {
    /// The queue under test.
    fn queue(&self) -> Arc<dyn Queue>;

    /// A second, separately connected queue value (its own pool) on the same namespace, with the
    /// same settings, as another process would have. Not migrated by this call.
    async fn another(&self) -> anyhow::Result<Arc<dyn Queue>>;

    /// The caller-transaction hooks, where the backend offers them
    /// (`capabilities().transactions`).
    fn transactions(&self) -> Option<&dyn Transactions> {
        None
    }

    /// Drops the namespace (schema, tables, file).
    async fn teardown(&self) -> anyhow::Result<()>;

    /// Locks the row of job `id` from a transaction of the test's own, as another
    /// application's transaction holding it would, until the returned lock is released: every
    /// statement that writes the row (or, where the database has one write lock, every write)
    /// waits meanwhile. `None` where the backend has no such lock.
    async fn lock_job(&self, id: JobId) -> anyhow::Result<Option<Box<dyn HeldLock>>> {
        let _ = id;
        Ok(None)
    }

    /// From now on, until [`Fixture::mend`], the statement that makes job `id` wait again
    /// after a retry of the dependency that cancelled it fails (a trigger that raises an error
    /// on that change of its row; in memory, the statement that reopens steps): a fault in the
    /// middle of a retry. `false` where the backend cannot do this.
    async fn break_reopen(&self, id: JobId) -> anyhow::Result<bool> {
        let _ = id;
        Ok(false)
    }

    /// Ends every fault [`Fixture::break_reopen`] made.
    async fn mend(&self) -> anyhow::Result<()> {
        Ok(())
    }

    /// In a namespace where nothing is migrated yet: applies the migrations of the previous
    /// release only and writes one job in each state the way that release wrote them (the
    /// running one with an expired lease, the dead one with `last_error` `boom`), for the case
    /// that migrates such a database forward. Returns each job's id and state; `None` where
    /// the backend has no such seed.
    async fn seed_previous_release(&self) -> anyhow::Result<Option<Vec<(JobId, JobState)>>> {
        Ok(None)
    }

    /// In a namespace where nothing is migrated yet: applies every migration but those that
    /// changed the jobs table since the previous release, whose statements are the current
    /// ones (only indexes changed). `false` where the backend's jobs table did not change.
    async fn migrate_previous_schema(&self) -> anyhow::Result<bool> {
        Ok(false)
    }

    /// The shortest retention rule the queue under test accepts, where it has one (PostgreSQL
    /// with finished partitions refuses a rule shorter than a partition): the cases whose
    /// rules are seconds long show as ignored there.
    fn retention_floor(&self) -> Option<std::time::Duration> {
        None
    }
}

/// A lock [`Fixture::lock_job`] holds.
#[async_trait]
pub trait HeldLock: Send {
    /// Releases it (rolls its transaction back).
    async fn release(self: Box<Self>) -> anyhow::Result<()>;
}

/// A push inside a transaction of the test's own that is still open
/// ([`Transactions::push_held`]).
#[async_trait]
pub trait HeldPush: Send {
    /// Commits the transaction.
    async fn commit(self: Box<Self>) -> anyhow::Result<()>;
}

/// Work inside a transaction of the caller's own, on the same database, with a table of the
/// caller's (`effects`, one text column) to show which writes committed.
#[async_trait]
pub trait Transactions: Send + Sync {
    /// In one transaction: inserts the effect `marker` and pushes `job`; then commits when
    /// `commit`, else rolls back. Returns the job's id.
    async fn push_in_tx(
        &self,
        job: NewJob,
        marker: &str,
        commit: bool,
    ) -> queue_core::Result<JobId>;

    /// In one transaction: inserts the effect `marker`, pushes `jobs` with the backend's
    /// `push_batch_in_tx`, then commits, whatever the push returned (a failed push is to leave
    /// the transaction usable, holding none of its jobs). Returns what the push returned, or
    /// the commit's error.
    async fn push_batch_in_tx(
        &self,
        jobs: Vec<NewJob>,
        marker: &str,
    ) -> queue_core::Result<Vec<JobId>>;

    /// In one transaction: inserts the effect `marker` and pushes `workflow`; then commits when
    /// `commit`, else rolls back.
    async fn push_workflow_in_tx(
        &self,
        workflow: queue_core::Workflow,
        marker: &str,
        commit: bool,
    ) -> queue_core::Result<queue_core::PushedWorkflow>;

    /// In one transaction: inserts the effect `marker` and completes the job held by `lease`;
    /// commits when completing succeeded, else rolls back and returns its error.
    async fn complete_in_tx(&self, lease: &Lease, marker: &str) -> queue_core::Result<()>;

    /// How many effects named `marker` are committed.
    async fn effects(&self, marker: &str) -> anyhow::Result<u64>;

    /// Pushes `job` inside a transaction of the caller's that stays open until the handle
    /// commits it (`None`: the fixture cannot).
    async fn push_held(
        &self,
        job: NewJob,
    ) -> queue_core::Result<Option<(JobId, Box<dyn HeldPush>)>> {
        let _ = job;
        Ok(None)
    }
}

/// What a case gets: the harness, the server, and a way to make isolated queues that are torn
/// down after the case.
#[derive(Clone)]
pub struct Ctx {
    harness: Arc<dyn Harness>,
    server: Server,
    fixtures: Arc<Mutex<Vec<Arc<dyn Fixture>>>>,
}

impl Ctx {
    /// The harness under test.
    pub fn harness(&self) -> &dyn Harness {
        &*self.harness
    }

    /// The server under test.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The suite's default settings for this harness.
    pub fn config(&self) -> TestConfig {
        TestConfig::new(self.harness.claim())
    }

    /// A fresh isolated queue with the default settings.
    ///
    /// # Errors
    /// When the backend cannot set one up.
    pub async fn fixture(&self) -> anyhow::Result<Arc<dyn Fixture>> {
        self.fixture_with(self.config()).await
    }

    /// A fresh isolated queue with `config`.
    ///
    /// # Errors
    /// When the backend cannot set one up.
    pub async fn fixture_with(&self, config: TestConfig) -> anyhow::Result<Arc<dyn Fixture>> {
        self.make(config, true).await
    }

    /// A fresh isolated namespace where nothing is migrated yet, and a queue on it.
    ///
    /// # Errors
    /// When the backend cannot set one up.
    pub async fn unmigrated_fixture(&self) -> anyhow::Result<Arc<dyn Fixture>> {
        self.make(self.config(), false).await
    }

    async fn make(&self, config: TestConfig, migrate: bool) -> anyhow::Result<Arc<dyn Fixture>> {
        let fx: Arc<dyn Fixture> =
            Arc::from(self.harness.fixture(&self.server, &config, migrate).await?);
        self.fixtures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(fx.clone());
        Ok(fx)
    }

    /// The error that ends a case that does not apply here (a capability is missing): the
    /// runner reports the case as ignored with this reason, never as passed.
    pub fn skip(&self, why: &str) -> anyhow::Error {
        anyhow::Error::new(Skipped(why.to_owned()))
    }
}

/// Why a case did not run; the runner reports it as ignored.
#[derive(Debug)]
pub struct Skipped(pub String);

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped: {}", self.0)
    }
}

impl std::error::Error for Skipped {}

/// Whether `QUEUE_TEST_REQUIRE` names `backend` (a missing server is then a failure).
pub fn required(backend: &str) -> bool {
    std::env::var("QUEUE_TEST_REQUIRE")
        .map(|v| v.split(',').any(|b| b.trim().eq_ignore_ascii_case(backend)))
        .unwrap_or(false)
}

/// How long the teardown of one fixture may take.
const TEARDOWN_LIMIT: Duration = Duration::from_secs(60);

/// How long one case or dialect test may run before it fails as hung: `QUEUE_TEST_CASE_TIMEOUT`
/// seconds, 300 by default. A hung case then fails with its name instead of holding the whole
/// test binary (and a CI run) until an outer limit kills it without saying which case it was.
///
/// # Panics
/// When the variable is set but is not a positive number of seconds.
pub fn case_limit() -> Duration {
    match std::env::var("QUEUE_TEST_CASE_TIMEOUT") {
        Err(_) => Duration::from_secs(300),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n > 0 => Duration::from_secs(n),
            _ => panic!("QUEUE_TEST_CASE_TIMEOUT: {v:?} is not a positive number of seconds"),
        },
    }
}

/// Runs the case `name` once against `server` and tears down every fixture it made; returns
/// the case's outcome (a panic inside the case is turned into an error).
///
/// # Errors
/// Whatever the case reported; a case that runs longer than [`case_limit`] fails as hung.
pub async fn run_on<F, Fut>(
    harness: Arc<dyn Harness>,
    server: &Server,
    name: &str,
    case: &F,
) -> anyhow::Result<()>
where
    F: Fn(Ctx) -> Fut,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let backend = harness.backend();
    let ctx = Ctx {
        harness,
        server: server.clone(),
        fixtures: Arc::default(),
    };
    let mut task = tokio::spawn(case(ctx.clone()));
    let limit = case_limit();
    let outcome = match tokio::time::timeout(limit, &mut task).await {
        Ok(joined) => Some(joined),
        Err(_) => {
            task.abort();
            let _ = task.await;
            None
        }
    };
    let fixtures = std::mem::take(&mut *ctx.fixtures.lock().unwrap_or_else(|e| e.into_inner()));
    for fx in fixtures {
        match tokio::time::timeout(TEARDOWN_LIMIT, fx.teardown()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!(
                "{backend} ({}): teardown after {name} failed: {e:#}",
                server.label
            ),
            Err(_) => eprintln!(
                "{backend} ({}): teardown after {name} did not finish within {} s",
                server.label,
                TEARDOWN_LIMIT.as_secs()
            ),
        }
    }
    let Some(outcome) = outcome else {
        return Err(anyhow::anyhow!(
            "{name} did not finish within {} s (QUEUE_TEST_CASE_TIMEOUT sets the limit)",
            limit.as_secs()
        ));
    };
    match outcome {
        Ok(result) => result,
        Err(join) if join.is_panic() => {
            let payload = join.into_panic();
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a panic".into());
            Err(anyhow::anyhow!("{name} panicked: {msg}"))
        }
        Err(join) => Err(anyhow::anyhow!("{name} did not finish: {join}")),
    }
}

/// Connects with `connect` to a closed port (`127.0.0.1:1`, in a URL whose password is
/// `hunter2`) and checks the refusal: `Unavailable`, within five seconds, naming the address and
/// the driver's reason rather than a pool timeout, and never the password.
///
/// # Errors
/// When any of that does not hold.
pub async fn expect_refused_connection<Q, F, Fut>(connect: F) -> anyhow::Result<()>
where
    Q: std::fmt::Debug,
    F: FnOnce() -> Fut,
    Fut: Future<Output = queue_core::Result<Q>>,
{
    let started = std::time::Instant::now();
    let err = match connect().await {
        Err(e) => e,
        Ok(q) => anyhow::bail!("connected to a closed port: {q:?}"),
    };
    anyhow::ensure!(
        matches!(err, queue_core::Error::Unavailable { .. }),
        "{err:?}"
    );
    anyhow::ensure!(started.elapsed() < Duration::from_secs(5));
    let shown = format!("{err} {err:?}");
    anyhow::ensure!(
        shown.contains("127.0.0.1:1"),
        "the address is named: {shown}"
    );
    anyhow::ensure!(
        !shown.contains("pool timed out"),
        "the real reason is given: {shown}"
    );
    anyhow::ensure!(!shown.contains("hunter2"), "{shown}");
    Ok(())
}
