//! The distributed engines the PostgreSQL and MySQL drivers detect by their banners: CockroachDB
//! and YugabyteDB (PostgreSQL's protocol, `PostgresQueue`) and TiDB (MySQL's, `MySqlQueue`).
//! Every engine runs the same tests, named `<engine>::<test>`: the driver detects the engine and
//! takes the claim its profile implies; four processes migrating one fresh namespace at once
//! apply every migration once; eight claimers, each with its own connections, take each of 400
//! jobs exactly once; a job that fails its last attempt is dead until `retry`.
//!
//! An engine's server is `QUEUE_TEST_<ENGINE>_URL` when set, else a container of its image when
//! a Docker engine answers (`conformance_tests::servers`), looked for when the first of its
//! tests runs. Without either its tests are ignored with the reason, or fail when
//! `QUEUE_TEST_REQUIRE` names the engine (`cockroachdb`, `yugabytedb`, `tidb`).

use std::collections::HashSet;
use std::future::Future;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{ensure, Context as _};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use conformance_tests::cases::{expect_state, get, job, pop_one, sleep_until_db};
use conformance_tests::servers::random_suffix;
use conformance_tests::{required, DialectTest, Discovery, Server};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use queue_core::{
    ClaimStrategy, EngineProfile, Error, FailOutcome, Failure, JobState, Lease, PopRequest, Queue,
    RetryPolicy, ServerKind, Wakeups,
};
use queue_mysql::MySqlQueue;
use queue_postgres::PostgresQueue;
use serde_json::json;
use sqlx::AssertSqlSafe;
use tokio::sync::OnceCell;

/// How long connecting may take: a distributed engine in a container can be slow to answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a call that failed with a retryable error (`Error::is_retryable`) is run again.
const RETRIES: u32 = 10;

/// Failures back off briefly, so that a failed job is due again within a test.
fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        base: Duration::from_millis(100),
        factor: 2.0,
        max: Duration::from_secs(1),
        jitter: 0.1,
    }
}

/// What the tests need of a driver: PostgreSQL's protocol or MySQL's.
#[async_trait]
trait Wire: Send + Sync + 'static {
    /// The driver's queue.
    type Queue: Queue + Clone;

    /// A fresh namespace: a schema (`t_<random>`) or a table prefix (`t<random>_`).
    fn namespace() -> String;

    /// Connects with the builder's defaults, given nothing but the URL.
    async fn connect_default(url: &str) -> queue_core::Result<Self::Queue>;

    /// Connects to the namespace `ns` with fast retries (does not migrate).
    async fn connect(url: &str, ns: &str) -> queue_core::Result<Self::Queue>;

    /// The claim strategy the driver takes, unless told otherwise, under `profile`.
    fn implied_claim(profile: &EngineProfile) -> ClaimStrategy;

    /// How many jobs tables the catalogue lists in `ns`.
    async fn job_tables(q: &Self::Queue, ns: &str) -> anyhow::Result<i64>;

    /// The migrations recorded in `ns`, oldest first: version and when it was applied.
    async fn migrations(q: &Self::Queue, ns: &str) -> anyhow::Result<Vec<(i64, String)>>;

    /// Drops the namespace `ns` (every table of it).
    async fn drop_namespace(q: &Self::Queue, ns: &str) -> anyhow::Result<()>;

    /// Closes the queue's connections.
    async fn close(q: &Self::Queue);
}

/// PostgreSQL's protocol: a schema per test.
struct PgWire;

/// A statement naming `schema`, a plain identifier made by the tests (`t_` and hex).
fn in_schema(sql: &str, schema: &str) -> AssertSqlSafe<String> {
    AssertSqlSafe(sql.replace("{schema}", schema))
}

#[async_trait]
impl Wire for PgWire {
    type Queue = PostgresQueue;

    fn namespace() -> String {
        format!("t_{}", random_suffix())
    }

    async fn connect_default(url: &str) -> queue_core::Result<PostgresQueue> {
        PostgresQueue::builder(url).connect().await
    }

    async fn connect(url: &str, ns: &str) -> queue_core::Result<PostgresQueue> {
        PostgresQueue::builder(url)
            .schema(ns)
            .connect_timeout(CONNECT_TIMEOUT)
            .retry_policy(fast_retries())
            .connect()
            .await
    }

    fn implied_claim(profile: &EngineProfile) -> ClaimStrategy {
        // Claims that lock with SKIP LOCKED also make their lease tokens in the UPDATE.
        if profile.skip_locked && profile.volatile_in_update {
            ClaimStrategy::SkipLocked
        } else {
            ClaimStrategy::Optimistic
        }
    }

    async fn job_tables(q: &PostgresQueue, ns: &str) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM information_schema.tables \
             WHERE table_schema = $1 AND table_name = 'jobs'",
        )
        .bind(ns)
        .fetch_one(q.pool())
        .await?)
    }

    async fn migrations(q: &PostgresQueue, ns: &str) -> anyhow::Result<Vec<(i64, String)>> {
        let rows: Vec<(i64, DateTime<Utc>)> = sqlx::query_as(in_schema(
            "SELECT version, applied_at FROM {schema}.migrations WHERE version > 0 \
             ORDER BY version",
            ns,
        ))
        .fetch_all(q.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(v, at)| (v, at.to_rfc3339()))
            .collect())
    }

    async fn drop_namespace(q: &PostgresQueue, ns: &str) -> anyhow::Result<()> {
        sqlx::raw_sql(in_schema("DROP SCHEMA IF EXISTS {schema} CASCADE", ns))
            .execute(q.pool())
            .await?;
        Ok(())
    }

    async fn close(q: &PostgresQueue) {
        q.pool().close().await;
    }
}

/// MySQL's protocol: a table prefix per test, in the URL's database.
struct MySqlWire;

#[async_trait]
impl Wire for MySqlWire {
    type Queue = MySqlQueue;

    fn namespace() -> String {
        format!("t{}_", random_suffix())
    }

    async fn connect_default(url: &str) -> queue_core::Result<MySqlQueue> {
        MySqlQueue::builder(url).connect().await
    }

    async fn connect(url: &str, ns: &str) -> queue_core::Result<MySqlQueue> {
        MySqlQueue::builder(url)
            .table_prefix(ns)
            .connect_timeout(CONNECT_TIMEOUT)
            .retry_policy(fast_retries())
            .connect()
            .await
    }

    fn implied_claim(profile: &EngineProfile) -> ClaimStrategy {
        // Lease tokens are always made by the client here: only SKIP LOCKED matters.
        if profile.skip_locked {
            ClaimStrategy::SkipLocked
        } else {
            ClaimStrategy::Optimistic
        }
    }

    async fn job_tables(q: &MySqlQueue, _ns: &str) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_name = ?",
        )
        .bind(q.jobs_table())
        .fetch_one(q.pool())
        .await?)
    }

    async fn migrations(q: &MySqlQueue, ns: &str) -> anyhow::Result<Vec<(i64, String)>> {
        let rows: Vec<(i64, NaiveDateTime)> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT version, applied_at FROM {ns}migrations WHERE version > 0 ORDER BY version"
        )))
        .fetch_all(q.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(v, at)| (v, at.to_string()))
            .collect())
    }

    async fn drop_namespace(q: &MySqlQueue, _ns: &str) -> anyhow::Result<()> {
        q.drop_tables().await?;
        Ok(())
    }

    async fn close(q: &MySqlQueue) {
        q.pool().close().await;
    }
}

/// An engine under test.
#[async_trait]
trait Engine: Send + Sync + 'static {
    /// Its name, in test names and as `QUEUE_TEST_REQUIRE` spells it.
    const NAME: &'static str;
    /// What its driver must detect.
    const KIND: ServerKind;
    /// The protocol it speaks.
    type Wire: Wire;

    /// Finds its server.
    async fn servers() -> Discovery;
}

type QueueOf<E> = <<E as Engine>::Wire as Wire>::Queue;

struct CockroachDb;

#[async_trait]
impl Engine for CockroachDb {
    const NAME: &'static str = "cockroachdb";
    const KIND: ServerKind = ServerKind::CockroachDb;
    type Wire = PgWire;

    async fn servers() -> Discovery {
        conformance_tests::servers::cockroachdb().await
    }
}

struct YugabyteDb;

#[async_trait]
impl Engine for YugabyteDb {
    const NAME: &'static str = "yugabytedb";
    const KIND: ServerKind = ServerKind::YugabyteDb;
    type Wire = PgWire;

    async fn servers() -> Discovery {
        conformance_tests::servers::yugabytedb().await
    }
}

struct TiDb;

#[async_trait]
impl Engine for TiDb {
    const NAME: &'static str = "tidb";
    const KIND: ServerKind = ServerKind::TiDb;
    type Wire = MySqlWire;

    async fn servers() -> Discovery {
        conformance_tests::servers::tidb().await
    }
}

/// A fresh namespace on an engine's server, and a queue connected to it (not migrated).
struct Place<E: Engine> {
    url: String,
    ns: String,
    queue: QueueOf<E>,
}

impl<E: Engine> Place<E> {
    /// Another queue value on the same namespace, with connections of its own (as another
    /// process has).
    async fn another(&self) -> queue_core::Result<QueueOf<E>> {
        E::Wire::connect(&self.url, &self.ns).await
    }

    /// The place's queue, as the functions of `conformance_tests::cases` take it.
    fn dyn_queue(&self) -> Arc<dyn Queue> {
        Arc::new(self.queue.clone())
    }
}

/// Runs `test` on a fresh namespace of `server`, then drops the namespace whatever the
/// outcome.
async fn on_fresh_namespace<E, F, Fut>(server: &Server, test: F) -> anyhow::Result<()>
where
    E: Engine,
    F: FnOnce(Arc<Place<E>>) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let ns = E::Wire::namespace();
    let queue = E::Wire::connect(&server.url, &ns)
        .await
        .with_context(|| format!("connect to {}", server.label))?;
    let place = Arc::new(Place::<E> {
        url: server.url.clone(),
        ns,
        queue,
    });
    let outcome = test(place.clone()).await;
    let dropped = E::Wire::drop_namespace(&place.queue, &place.ns)
        .await
        .with_context(|| format!("drop {}", place.ns));
    E::Wire::close(&place.queue).await;
    outcome.and(dropped)
}

/// Runs `call` again while it fails with a retryable error (`Error::is_retryable`), at most
/// [`RETRIES`] times, backing off a little more each time.
async fn retrying<T, F, Fut>(what: &str, mut call: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = queue_core::Result<T>>,
{
    let mut retried = 0;
    loop {
        match call().await {
            Ok(v) => return Ok(v),
            Err(e) if e.is_retryable() && retried < RETRIES => {
                retried += 1;
                tokio::time::sleep(Duration::from_millis(20 * u64::from(retried))).await;
            }
            Err(e) => return Err(e).with_context(|| format!("{what} (retried {retried} times)")),
        }
    }
}

/// The driver detects the engine from its banner, settles the engine's own profile, and takes
/// the claim that profile implies: the optimistic claim, since none of these engines has SKIP
/// LOCKED that the queue relies on; without LISTEN/NOTIFY, wake-ups are in-process only.
async fn detects_its_profile<E: Engine>(server: Server) -> anyhow::Result<()> {
    let q = E::Wire::connect_default(&server.url).await?;
    let caps = q.capabilities().clone();
    E::Wire::close(&q).await;
    let banner = caps.server_version.as_deref().unwrap_or("no version");
    ensure!(
        caps.profile.server == E::KIND,
        "detected {} from {banner:?}, expected {}",
        caps.profile.server,
        E::KIND
    );
    ensure!(
        caps.profile == EngineProfile::of(E::KIND),
        "profile {:?}, expected {:?}",
        caps.profile,
        EngineProfile::of(E::KIND)
    );
    let implied = E::Wire::implied_claim(&caps.profile);
    ensure!(
        caps.claim == implied,
        "claims {}, the profile implies {}",
        caps.claim.as_str(),
        implied.as_str()
    );
    ensure!(
        caps.claim == ClaimStrategy::Optimistic,
        "{} claims {} with profile {:?}",
        E::NAME,
        caps.claim.as_str(),
        caps.profile
    );
    if !caps.profile.listen_notify {
        ensure!(caps.wakeups == Wakeups::InProcess, "{:?}", caps.wakeups);
    }
    Ok(())
}

/// Four queue values (as four processes) migrate one fresh namespace at once: all succeed, the
/// jobs table exists once, every migration is recorded once, and migrating again changes
/// nothing.
async fn migrates_concurrently_once<E: Engine>(server: Server) -> anyhow::Result<()> {
    on_fresh_namespace::<E, _, _>(&server, |place| async move {
        let mut queues = vec![place.queue.clone()];
        for _ in 1..4 {
            queues.push(place.another().await?);
        }
        let outcome = async {
            let migrated = futures::future::join_all(queues.iter().map(|q| q.migrate())).await;
            for (i, r) in migrated.into_iter().enumerate() {
                r.with_context(|| format!("migrate through value {i}"))?;
            }
            let tables = E::Wire::job_tables(&place.queue, &place.ns).await?;
            ensure!(tables == 1, "{tables} jobs tables in {}", place.ns);
            let applied = E::Wire::migrations(&place.queue, &place.ns).await?;
            let versions: Vec<i64> = applied.iter().map(|(v, _)| *v).collect();
            ensure!(
                !versions.is_empty() && versions.iter().copied().eq(1..=versions.len() as i64),
                "every migration recorded once, in order: {versions:?}"
            );
            queues[3].migrate().await.context("migrate again")?;
            let again = E::Wire::migrations(&place.queue, &place.ns).await?;
            ensure!(
                again == applied,
                "migrating again changed the record: {applied:?} -> {again:?}"
            );
            ensure!(E::Wire::job_tables(&place.queue, &place.ns).await? == 1);
            Ok(())
        }
        .await;
        for q in &queues[1..] {
            E::Wire::close(q).await;
        }
        outcome
    })
    .await
}

/// The queue the claimers drain.
const CLAIMED: &str = "claims";

/// Acks `lease`, again while that fails with a retryable error. An ack whose answer was lost
/// after it committed finds, when it runs again, its job completed (`LeaseLost`): that counts
/// as acked.
async fn ack(q: &Arc<dyn Queue>, lease: &Lease) -> anyhow::Result<()> {
    let mut retried = 0;
    loop {
        match q.ack(lease).await {
            Ok(()) => return Ok(()),
            Err(e) if e.is_retryable() && retried < RETRIES => {
                retried += 1;
                tokio::time::sleep(Duration::from_millis(20 * u64::from(retried))).await;
            }
            Err(Error::LeaseLost { .. })
                if retried > 0 && get(q, lease.job_id).await?.state == JobState::Completed =>
            {
                return Ok(())
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("ack {} (retried {retried} times)", lease.job_id))
            }
        }
    }
}

/// Pops ten at a time and acks until no job is available, noting every job it was given in
/// `seen` (a job given twice is an error).
async fn claim_until_empty(
    q: Arc<dyn Queue>,
    worker: String,
    seen: Arc<Mutex<HashSet<queue_core::JobId>>>,
) -> anyhow::Result<()> {
    loop {
        let got = retrying("pop", || {
            q.pop(
                PopRequest::new(CLAIMED)
                    .limit(10)
                    .lease(Duration::from_secs(300))
                    .worker(worker.as_str()),
            )
        })
        .await?;
        if got.is_empty() {
            // An optimistic claim may come back empty while others hold its candidates: the
            // queue is drained once no job of it is available.
            let stats = retrying("stats", || q.stats(Some(CLAIMED))).await?;
            if stats.iter().all(|s| s.available == 0) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        for leased in got {
            let id = leased.job.id;
            ensure!(
                seen.lock().unwrap_or_else(|e| e.into_inner()).insert(id),
                "job {id} was claimed twice"
            );
            ack(&q, &leased.lease).await?;
        }
    }
}

/// Eight claimers, each with a queue value (and connections) of its own, drain 400 jobs pushed
/// in one batch: every job is given out exactly once, and the database holds all 400 completed
/// on their first attempt.
async fn concurrent_claimers_take_each_job_once<E: Engine>(server: Server) -> anyhow::Result<()> {
    const JOBS: usize = 400;
    const CLAIMERS: usize = 8;
    on_fresh_namespace::<E, _, _>(&server, |place| async move {
        place.queue.migrate().await?;
        let q = place.dyn_queue();
        let ids = q
            .push_batch((0..JOBS).map(|n| job(CLAIMED, json!({ "n": n }))).collect())
            .await?;
        let mut claimers = Vec::new();
        for _ in 0..CLAIMERS {
            claimers.push(place.another().await?);
        }
        let seen = Arc::new(Mutex::new(HashSet::new()));
        let handles: Vec<_> = claimers
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let c: Arc<dyn Queue> = Arc::new(c.clone());
                tokio::spawn(claim_until_empty(c, format!("claimer-{i}"), seen.clone()))
            })
            .collect();
        let mut outcome = Ok(());
        for (i, t) in handles.into_iter().enumerate() {
            let r = t
                .await
                .map_err(anyhow::Error::from)
                .and_then(|r| r)
                .with_context(|| format!("claimer {i}"));
            outcome = outcome.and(r);
        }
        for c in &claimers {
            E::Wire::close(c).await;
        }
        outcome?;

        let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
        let missing = ids.iter().filter(|id| !seen.contains(id)).count();
        ensure!(
            seen.len() == JOBS && missing == 0,
            "{} jobs claimed, {missing} of the {JOBS} pushed never",
            seen.len()
        );
        let stats = q.stats(Some(CLAIMED)).await?;
        ensure!(
            stats.len() == 1
                && stats[0].completed == JOBS as u64
                && stats[0].count(JobState::Pending) == 0
                && stats[0].running == 0
                && stats[0].dead == 0,
            "{stats:?}"
        );
        for id in &ids {
            let j = get(&q, *id).await?;
            ensure!(
                j.state == JobState::Completed && j.attempts == 1,
                "job {id}: {} after {} attempts",
                j.state,
                j.attempts
            );
        }
        Ok(())
    })
    .await
}

/// A job with two attempts that fails both is dead; `retry` brings it back to pending with its
/// attempts reset, and it runs again.
async fn fail_retry_and_dead<E: Engine>(server: Server) -> anyhow::Result<()> {
    on_fresh_namespace::<E, _, _>(&server, |place| async move {
        place.queue.migrate().await?;
        let q = place.dyn_queue();
        let id = q.push(job("frd", json!("x")).max_attempts(2)).await?;

        let l = pop_one(&q, "frd").await?;
        ensure!(l.job.id == id && l.lease.attempt == 1, "{:?}", l.lease);
        let outcome = q.fail(&l.lease, Failure::retryable("first")).await?;
        ensure!(
            matches!(outcome, FailOutcome::Retrying { .. }),
            "{outcome:?}"
        );
        let j = expect_state(&q, id, JobState::Pending).await?;
        ensure!(
            j.attempts == 1 && j.last_error.as_deref() == Some("first"),
            "{j:?}"
        );

        sleep_until_db(&q, j.run_at).await?;
        let l = pop_one(&q, "frd").await?;
        ensure!(l.lease.attempt == 2, "{:?}", l.lease);
        let outcome = q.fail(&l.lease, Failure::retryable("second")).await?;
        ensure!(outcome == FailOutcome::Dead, "{outcome:?}");
        let j = expect_state(&q, id, JobState::Dead).await?;
        ensure!(
            j.attempts == 2 && j.finished_at.is_some() && j.last_error.as_deref() == Some("second"),
            "{j:?}"
        );

        q.retry(id).await?;
        let j = expect_state(&q, id, JobState::Pending).await?;
        ensure!(j.attempts == 0 && j.finished_at.is_none(), "{j:?}");
        let l = pop_one(&q, "frd").await?;
        ensure!(l.job.id == id && l.lease.attempt == 1, "{:?}", l.lease);
        q.ack(&l.lease).await?;
        expect_state(&q, id, JobState::Completed).await?;
        Ok(())
    })
    .await
}

/// The tests every engine runs.
fn tests<E: Engine>() -> Vec<DialectTest> {
    vec![
        DialectTest {
            name: "detects_its_profile",
            run: |server| Box::pin(detects_its_profile::<E>(server)),
        },
        DialectTest {
            name: "migrates_concurrently_once",
            run: |server| Box::pin(migrates_concurrently_once::<E>(server)),
        },
        DialectTest {
            name: "concurrent_claimers_take_each_job_once",
            run: |server| Box::pin(concurrent_claimers_take_each_job_once::<E>(server)),
        },
        DialectTest {
            name: "fail_retry_and_dead",
            run: |server| Box::pin(fail_retry_and_dead::<E>(server)),
        },
    ]
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
}

/// The trials of engine `E`. Its server is looked for once, by the first of them that runs (so
/// that a filtered run starts no container of other engines); a missing server makes each of
/// them ignored with the reason, or failed when `QUEUE_TEST_REQUIRE` names the engine.
fn trials<E: Engine>() -> Vec<Trial> {
    let discovery: Arc<OnceCell<Discovery>> = Arc::default();
    tests::<E>()
        .into_iter()
        .map(|test| {
            let discovery = discovery.clone();
            Trial::ignorable_test(format!("{}::{}", E::NAME, test.name), move || {
                let rt = runtime().map_err(|e| Failed::from(e.to_string()))?;
                let found = rt.block_on(discovery.get_or_init(E::servers)).clone();
                let servers = match found {
                    Discovery::Servers(servers) => servers,
                    Discovery::Missing(why) if required(E::NAME) => {
                        return Err(Failed::from(format!(
                            "{} is required by QUEUE_TEST_REQUIRE but missing: {why}",
                            E::NAME
                        )))
                    }
                    Discovery::Missing(why) => return Ok(Completion::ignored_with(why)),
                };
                for server in servers {
                    let label = server.label.clone();
                    rt.block_on(async {
                        tokio::spawn((test.run)(server))
                            .await
                            .map_err(|e| anyhow::anyhow!("{} did not finish: {e}", test.name))?
                    })
                    .map_err(|e| Failed::from(format!("{:?}", e.context(format!("on {label}")))))?;
                }
                Ok(Completion::Completed)
            })
        })
        .collect()
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let mut all = trials::<CockroachDb>();
    all.extend(trials::<YugabyteDb>());
    all.extend(trials::<TiDb>());
    libtest_mimic::run(&args, all).exit_code()
}
