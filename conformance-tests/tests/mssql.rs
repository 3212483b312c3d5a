//! The conformance suite on SQL Server: every case in both claim strategies, each in a fresh
//! schema `t<random>` that is dropped at the end, on two databases: `queue_test`
//! (READ_COMMITTED_SNAPSHOT off) and `queue_test_rcsi` (on, as on Azure SQL Database, where a
//! claim without READCOMMITTEDLOCK would read row versions). Plus what is SQL Server's own:
//! session settings, the claim's plan, chunked batches, a caller's transaction left open.
//!
//! The server: `QUEUE_TEST_MSSQL_URL` (a `mssql://` URL of a login that may create databases),
//! else a SQL Server 2022 container when a Docker engine answers, else every test is reported
//! as ignored with the reason (`QUEUE_TEST_REQUIRE=mssql` makes that a failure). A server that
//! refuses to prepare a database (a T-SQL server without `ALTER DATABASE ... SET
//! READ_COMMITTED_SNAPSHOT`) still runs every case on the other; each test then reports itself
//! ignored, naming the database and the server's refusal, never passed.
//!
//! The SQL Server harness is written against the suite's traits directly: the suite's
//! `SqlBackend` helper is built on sqlx, which has no SQL Server driver.

use std::any::Any;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use async_trait::async_trait;
use conformance_tests::servers::{docker_answers, random_suffix};
use conformance_tests::{
    dialect_tests, local_tests, run_suite_with, Discovery, Fixture, Harness, HeldLock, Server,
    TestConfig, Transactions,
};
use queue_core::engine::statements::load;
use queue_core::{
    BulkAction, BulkOutcome, ClaimStrategy, Dialect, Error, Failure, JobFilter, JobId, JobState,
    Lease, Limits, NewJob, PopRequest, Queue, Unique,
};
use queue_mssql::tiberius::{ColumnData, Query};
use queue_mssql::{
    open_session, Client, MsSqlQueue, MsSqlQueueBuilder, MsSqlTransaction, UrlParts,
};

/// The variable naming the server.
const VAR: &str = "QUEUE_TEST_MSSQL_URL";
/// The databases every case runs on, with READ_COMMITTED_SNAPSHOT off and on.
const DATABASES: [(&str, bool); 2] = [("queue_test", false), ("queue_test_rcsi", true)];

fn builder(url: &str, schema: &str) -> MsSqlQueueBuilder {
    MsSqlQueue::builder(url)
        .schema(schema)
        .max_connections(24)
        .connect_timeout(Duration::from_secs(10))
}

async fn connect(
    server: &Server,
    schema: &str,
    config: &TestConfig,
) -> queue_core::Result<MsSqlQueue> {
    builder(&server.url, schema)
        .claim_strategy(config.claim)
        .retry_policy(config.retry.clone())
        .limits(config.limits.clone())
        .keep_completed_jobs(config.keep_completed)
        .connect()
        .await
}

/// One session straight to the server `url` names (for setting up databases, outside any
/// transaction).
async fn raw_client(url: &str) -> anyhow::Result<Client> {
    Ok(open_session(&UrlParts::parse(url)?.config()).await?)
}

/// `url` naming database `db` instead (its path replaced).
fn with_database(url: &str, db: &str) -> anyhow::Result<String> {
    let (scheme, rest) = url.split_once("://").context("not a URL")?;
    let (main, query) = match rest.split_once('?') {
        Some((m, q)) => (m, Some(q)),
        None => (rest, None),
    };
    let authority = main.split('/').next().unwrap_or_default();
    Ok(match query {
        Some(q) => format!("{scheme}://{authority}/{db}?{q}"),
        None => format!("{scheme}://{authority}/{db}"),
    })
}

/// Runs `sql` (no values) as a batch of its own, outside any transaction.
async fn batch(client: &mut Client, sql: &str) -> anyhow::Result<()> {
    client.simple_query(sql).await?.into_results().await?;
    Ok(())
}

/// Creates database `db` unless it exists, in a batch of its own: a server that refuses a
/// statement rejects its whole batch.
async fn create_database(client: &mut Client, db: &str) -> anyhow::Result<()> {
    // `db` is one of the fixed names of [`DATABASES`]; nothing from outside is spliced (a
    // database name cannot be bound).
    let sql = format!("IF DB_ID(N'{db}') IS NULL CREATE DATABASE [{db}]");
    batch(client, &sql)
        .await
        .with_context(|| format!("the server refused `{sql}`"))
}

/// Whether the server reports READ_COMMITTED_SNAPSHOT on for database `db`.
async fn read_committed_snapshot(client: &mut Client, db: &str) -> anyhow::Result<bool> {
    let mut query = Query::new(
        "SELECT CAST(is_read_committed_snapshot_on AS INT) AS rcsi FROM sys.databases \
         WHERE name = @P1",
    );
    query.bind(db);
    let row = query
        .query(client)
        .await?
        .into_row()
        .await?
        .with_context(|| format!("sys.databases has no row for {db}"))?;
    Ok(row.try_get::<i32, _>("rcsi")?.unwrap_or(0) == 1)
}

/// Sets READ_COMMITTED_SNAPSHOT of database `db` to `on` where the server reports otherwise, in
/// a batch of its own (it may not run inside a transaction), and checks that it took.
async fn set_read_committed_snapshot(
    client: &mut Client,
    db: &str,
    on: bool,
) -> anyhow::Result<()> {
    if read_committed_snapshot(client, db).await? == on {
        return Ok(());
    }
    let setting = if on { "ON" } else { "OFF" };
    let sql = format!(
        "ALTER DATABASE [{db}] SET READ_COMMITTED_SNAPSHOT {setting} WITH ROLLBACK IMMEDIATE"
    );
    batch(client, &sql)
        .await
        .with_context(|| format!("the server refused `{sql}`"))?;
    ensure!(
        read_committed_snapshot(client, db).await? == on,
        "the server accepted `{sql}` but does not report READ_COMMITTED_SNAPSHOT {setting}"
    );
    Ok(())
}

/// Prepares the test databases of [`DATABASES`] (idempotent), each on its own: for each, `None`
/// when it is ready, or why its cases cannot run there (the server refused to create it or to
/// set its READ_COMMITTED_SNAPSHOT). A server that cannot create the plain database, or
/// connect, is an error: every case then fails, naming it.
async fn prepare_databases(url: &str) -> anyhow::Result<Vec<Option<String>>> {
    let mut client = raw_client(url).await?;
    let mut ready = Vec::new();
    for (db, rcsi) in DATABASES {
        let prepared = match create_database(&mut client, db).await {
            Ok(()) => set_read_committed_snapshot(&mut client, db, rcsi).await,
            // Without the plain database no case can run anywhere.
            Err(e) if !rcsi => return Err(e),
            Err(e) => Err(e),
        };
        ready.push(prepared.err().map(|e| format!("{e:#}")));
    }
    Ok(ready)
}

/// The servers: the two databases on the server of `QUEUE_TEST_MSSQL_URL`, else on a container.
async fn discover() -> Discovery {
    let (label, url) = match std::env::var(VAR).ok().filter(|v| !v.trim().is_empty()) {
        Some(url) => (VAR.to_owned(), url),
        None if docker_answers().await => match container::start().await {
            Ok(url) => ("mssql:2022 container".to_owned(), url),
            Err(e) => {
                return Discovery::Missing(format!(
                    "Docker answers but the SQL Server container did not start ({e}); set {VAR}"
                ))
            }
        },
        None => return Discovery::Missing(format!("set {VAR} or start Docker")),
    };
    if UrlParts::parse(&url).is_err() {
        return Discovery::Missing(format!(
            "{VAR} must be a mssql:// URL, e.g. \
             mssql://sa:password@127.0.0.1:1433/master?trust_server_certificate=true"
        ));
    }
    let unusable = match prepare_databases(&url).await {
        Ok(unusable) => unusable,
        Err(e) => {
            // Every case then fails, naming what went wrong; the URL was given, so it must work.
            eprintln!("mssql: could not prepare the test databases: {e:#}");
            vec![None; DATABASES.len()]
        }
    };
    let mut servers = Vec::new();
    for ((db, rcsi), unusable) in DATABASES.into_iter().zip(unusable) {
        let label = format!(
            "{label}, database {db} (READ_COMMITTED_SNAPSHOT {})",
            if rcsi { "on" } else { "off" }
        );
        if let Some(why) = &unusable {
            eprintln!("mssql: no case runs on {label}: {why}");
        }
        match with_database(&url, db) {
            Ok(url) => servers.push(Server {
                unusable,
                ..Server::new(label, url)
            }),
            Err(e) => return Discovery::Missing(format!("{VAR}: {e}")),
        }
    }
    Discovery::Servers(servers)
}

mod container {
    //! A SQL Server container, started once per test binary on a runtime of its own that
    //! outlives every test's runtime, and kept until the binary exits.

    use super::*;
    use testcontainers_modules::mssql_server::MssqlServer;
    use testcontainers_modules::testcontainers::runners::AsyncRunner;
    use testcontainers_modules::testcontainers::ImageExt;
    use tokio::sync::OnceCell;

    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    static KEEP: Mutex<Vec<Box<dyn Any + Send>>> = Mutex::new(Vec::new());
    static STARTED: OnceCell<Result<String, String>> = OnceCell::const_new();

    pub(super) async fn start() -> Result<String, String> {
        STARTED
            .get_or_init(|| async {
                let rt = RUNTIME.get_or_init(|| {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(1)
                        .enable_all()
                        .build()
                        .ok()
                });
                let Some(rt) = rt else {
                    return Err("could not start a runtime for the container".into());
                };
                rt.spawn(async {
                    // A fresh password per run that meets SQL Server's complexity rules.
                    let password = format!("Q{}-t9", random_suffix());
                    let c = MssqlServer::default()
                        .with_accept_eula()
                        .with_sa_password(password.clone())
                        .with_startup_timeout(Duration::from_secs(180))
                        .start()
                        .await
                        .map_err(|e| e.to_string())?;
                    let host = c.get_host().await.map_err(|e| e.to_string())?;
                    let port = c
                        .get_host_port_ipv4(1433)
                        .await
                        .map_err(|e| e.to_string())?;
                    KEEP.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(Box::new(c));
                    Ok(format!(
                        "mssql://sa:{password}@{host}:{port}/master?trust_server_certificate=true"
                    ))
                })
                .await
                .unwrap_or_else(|e| Err(format!("container task failed: {e}")))
            })
            .await
            .clone()
    }
}

/// A statement naming tables of `schema`, a plain identifier made by the suite (`t` and hex).
fn in_schema(sql: &str, schema: &str) -> String {
    sql.replace("{schema}", schema)
}

/// The fixture's own table: what a caller's transaction wrote beside the queue's statements.
const EFFECTS_TABLE: &str = "CREATE TABLE [{schema}].[effects] (marker NVARCHAR(255) NOT NULL)";

/// The SQL Server backend's migrations: every file of `queue-mssql/migrations` (each one is a
/// migration `migrate` applies, which a unit test of that crate checks), in name order, and
/// the statement that creates the migrations table, as `(file name, text)`.
fn migration_files() -> anyhow::Result<Vec<(String, String)>> {
    let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../queue-mssql");
    let dir = crate_dir.join("migrations");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| dir.display().to_string())? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "sql") {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            files.push((name, std::fs::read_to_string(&path)?));
        }
    }
    files.sort();
    ensure!(!files.is_empty(), "no migration in {}", dir.display());
    let table = crate_dir.join("queries/migration_table.sql");
    files.push((
        "migration_table.sql".to_owned(),
        std::fs::read_to_string(&table).with_context(|| table.display().to_string())?,
    ));
    Ok(files)
}

/// The tables `sql` creates, in order: each `CREATE TABLE [{schema}].[name]` (also inside an
/// `EXEC`), comments left out. A `CREATE TABLE` in any other form is an error, so that no table
/// is missed.
fn created_tables(sql: &str) -> anyhow::Result<Vec<String>> {
    let code: Vec<&str> = sql
        .lines()
        .map(|l| l.split("--").next().unwrap_or_default())
        .collect();
    let flat = code
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let upper = flat.to_ascii_uppercase();
    let mut tables = Vec::new();
    let mut from = 0;
    while let Some(at) = upper[from..].find("CREATE TABLE ") {
        let rest = &flat[from + at + "CREATE TABLE ".len()..];
        let name = rest
            .strip_prefix("[{schema}].[")
            .and_then(|r| r.split_once(']'))
            .map(|(name, _)| name)
            .filter(|name| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            .with_context(|| {
                let start: String = rest.chars().take(60).collect();
                format!("a CREATE TABLE not of the form [{{schema}}].[name]: {start}")
            })?;
        if !tables.iter().any(|t| t == name) {
            tables.push(name.to_owned());
        }
        from += at + "CREATE TABLE ".len();
    }
    Ok(tables)
}

/// Every table a fixture may leave in its schema: the fixture's `effects`, then each table the
/// migrations create (and the migrations table), newest first. Derived from the migration files
/// each time the test binary starts, so a migration that adds a table adds it here.
fn schema_tables() -> anyhow::Result<&'static [String]> {
    static TABLES: OnceLock<Result<Vec<String>, String>> = OnceLock::new();
    let tables = TABLES.get_or_init(|| {
        let derive = || -> anyhow::Result<Vec<String>> {
            let mut tables = created_tables(EFFECTS_TABLE)?;
            let mut created = Vec::new();
            for (name, text) in migration_files()? {
                for table in created_tables(&text).with_context(|| name.clone())? {
                    if !created.contains(&table) {
                        created.push(table);
                    }
                }
            }
            tables.extend(created.into_iter().rev());
            Ok(tables)
        };
        derive().map_err(|e| format!("{e:#}"))
    });
    match tables {
        Ok(t) => Ok(t),
        Err(e) => bail!("the tables of the migrations: {e}"),
    }
}

/// The batch that drops every table of `schema` ([`schema_tables`]), then the schema itself
/// (which SQL Server refuses while a table is left in it).
fn drop_batch(schema: &str) -> anyhow::Result<String> {
    let mut sql: String = schema_tables()?
        .iter()
        .map(|t| format!("DROP TABLE IF EXISTS [{schema}].[{t}]; "))
        .collect();
    sql.push_str(&format!("DROP SCHEMA IF EXISTS [{schema}];"));
    Ok(sql)
}

/// Runs `sql` (no values) in a transaction of its own on `q`'s pool.
async fn run_batch(q: &MsSqlQueue, sql: &str) -> anyhow::Result<()> {
    let mut tx = q.begin().await?;
    tx.client().simple_query(sql).await?.into_results().await?;
    tx.commit().await?;
    Ok(())
}

/// The first column of the first row of `sql` with `params`, as an i64 (a count).
async fn scalar(q: &MsSqlQueue, sql: &str, params: &[&str]) -> anyhow::Result<i64> {
    let mut tx = q.begin().await?;
    let mut query = Query::new(sql);
    for p in params {
        query.bind(*p);
    }
    let row = query.query(tx.client()).await?.into_row().await?;
    let n = match row {
        Some(r) => r
            .try_get::<i64, _>(0)
            .or_else(|_| r.try_get::<i32, _>(0).map(|v| v.map(i64::from)))?
            .unwrap_or(0),
        None => 0,
    };
    tx.commit().await?;
    Ok(n)
}

fn hook_error(e: impl std::fmt::Display) -> queue_core::Error {
    queue_core::Error::database(Box::<dyn std::error::Error + Send + Sync>::from(
        e.to_string(),
    ))
}

struct MsSqlHarness {
    claim: ClaimStrategy,
}

#[async_trait]
impl Harness for MsSqlHarness {
    fn backend(&self) -> &'static str {
        "mssql"
    }

    fn claim(&self) -> ClaimStrategy {
        self.claim
    }

    async fn servers(&self) -> Discovery {
        discover().await
    }

    async fn fixture(
        &self,
        server: &Server,
        config: &TestConfig,
        migrate: bool,
    ) -> anyhow::Result<Box<dyn Fixture>> {
        let schema = format!("t{}", random_suffix());
        let queue = connect(server, &schema, config).await?;
        if migrate {
            queue.migrate().await?;
            run_batch(&queue, &in_schema(EFFECTS_TABLE, &schema)).await?;
        }
        Ok(Box::new(MsSqlFixture {
            queue,
            server: server.clone(),
            schema,
            config: config.clone(),
            others: Mutex::default(),
        }))
    }

    async fn unreachable(&self, config: &TestConfig) -> queue_core::Result<Option<Arc<dyn Queue>>> {
        let q = MsSqlQueue::builder("mssql://sa:secret@127.0.0.1:1/queue_test")
            .claim_strategy(config.claim)
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await?;
        Ok(Some(Arc::new(q)))
    }
}

/// A migrated schema and a queue on it.
struct MsSqlFixture {
    queue: MsSqlQueue,
    server: Server,
    schema: String,
    config: TestConfig,
    others: Mutex<Vec<MsSqlQueue>>,
}

#[async_trait]
impl Fixture for MsSqlFixture {
    fn queue(&self) -> Arc<dyn Queue> {
        Arc::new(self.queue.clone())
    }

    async fn another(&self) -> anyhow::Result<Arc<dyn Queue>> {
        let q = connect(&self.server, &self.schema, &self.config).await?;
        self.others
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(q.clone());
        Ok(Arc::new(q))
    }

    fn transactions(&self) -> Option<&dyn Transactions> {
        Some(self)
    }

    async fn seed_previous_release(&self) -> anyhow::Result<Option<Vec<(JobId, JobState)>>> {
        use queue_core::Backend as _;
        // Migration 3 (schedules) was the newest before job kinds.
        self.queue.engine().migrate_until(3).await?;
        let sql = in_schema(
            "INSERT INTO [{schema}].[jobs] (id, queue, payload, priority, state, attempts, \
             max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, \
             created_at, updated_at, finished_at) \
             VALUES (CAST(@P1 AS BINARY(16)), N'legacy', N'{\"old\": true}', 0, @P2, @P3, 3, \
             DATEADD(SECOND, -5, SYSUTCDATETIME()), \
             CASE WHEN @P4 = 1 THEN NEWID() END, \
             CASE WHEN @P4 = 1 THEN DATEADD(SECOND, -1, SYSUTCDATETIME()) END, @P5, @P6, NULL, \
             DATEADD(SECOND, -5, SYSUTCDATETIME()), DATEADD(SECOND, -4, SYSUTCDATETIME()), \
             CASE WHEN @P7 = 1 THEN DATEADD(SECOND, -4, SYSUTCDATETIME()) END)",
            &self.schema,
        );
        let mut tx = self.queue.begin().await?;
        let mut seeded = Vec::new();
        for (state, attempts, lease, worker, error, finished) in [
            ("pending", 0i32, false, None, None, false),
            ("running", 1, true, Some("old-worker"), None, false),
            ("completed", 1, false, Some("old-worker"), None, true),
            ("dead", 3, false, Some("old-worker"), Some("boom"), true),
            ("cancelled", 0, false, None, None, true),
        ] {
            let id = JobId::new();
            let bytes = id.0.as_bytes().to_vec();
            tx.client()
                .execute(
                    sql.as_str(),
                    &[
                        &bytes, &state, &attempts, &lease, &worker, &error, &finished,
                    ],
                )
                .await?;
            seeded.push((id, state.parse()?));
        }
        tx.commit().await?;
        Ok(Some(seeded))
    }

    /// An update lock on the job's row, held by a transaction of the test's.
    async fn lock_job(&self, id: JobId) -> anyhow::Result<Option<Box<dyn HeldLock>>> {
        let mut tx = self.queue.begin().await?;
        let sql = in_schema(
            "SELECT 1 FROM [{schema}].[jobs] WITH (UPDLOCK, ROWLOCK) WHERE id = @P1",
            &self.schema,
        );
        let mut query = Query::new(sql);
        query.bind(id.0.as_bytes().to_vec());
        query.query(tx.client()).await?.into_results().await?;
        Ok(Some(Box::new(RowLock(tx))))
    }

    /// A check constraint (not a trigger: a table with an enabled trigger refuses every
    /// statement with an OUTPUT clause) whose function finds the job listed in a table of the
    /// test's and about to be waiting.
    async fn break_reopen(&self, id: JobId) -> anyhow::Result<bool> {
        run_batch(
            &self.queue,
            &in_schema(
                "IF OBJECT_ID(N'[{schema}].[broken_reopens]', N'U') IS NULL \
                 CREATE TABLE [{schema}].[broken_reopens] (id BINARY(16) NOT NULL PRIMARY KEY);",
                &self.schema,
            ),
        )
        .await?;
        run_batch(
            &self.queue,
            &in_schema(
                "CREATE OR ALTER FUNCTION [{schema}].[broken_reopen] \
                 (@id BINARY(16), @state NVARCHAR(16)) RETURNS INT AS BEGIN \
                 RETURN CASE WHEN @state = N'waiting' AND EXISTS \
                 (SELECT 1 FROM [{schema}].[broken_reopens] AS b WHERE b.id = @id) \
                 THEN 1 ELSE 0 END; END",
                &self.schema,
            ),
        )
        .await?;
        let mut tx = self.queue.begin().await?;
        let mut query = Query::new(in_schema(
            "INSERT INTO [{schema}].[broken_reopens] (id) VALUES (@P1)",
            &self.schema,
        ));
        query.bind(id.0.as_bytes().to_vec());
        query.execute(tx.client()).await?;
        tx.commit().await?;
        run_batch(
            &self.queue,
            &in_schema(
                "IF OBJECT_ID(N'[{schema}].[broken_reopen_check]', N'C') IS NULL \
                 ALTER TABLE [{schema}].[jobs] ADD CONSTRAINT broken_reopen_check \
                 CHECK ([{schema}].[broken_reopen](id, state) = 0);",
                &self.schema,
            ),
        )
        .await?;
        Ok(true)
    }

    async fn mend(&self) -> anyhow::Result<()> {
        run_batch(
            &self.queue,
            &in_schema(
                "IF OBJECT_ID(N'[{schema}].[broken_reopen_check]', N'C') IS NOT NULL \
                 ALTER TABLE [{schema}].[jobs] DROP CONSTRAINT broken_reopen_check; \
                 DROP FUNCTION IF EXISTS [{schema}].[broken_reopen]; \
                 DROP TABLE IF EXISTS [{schema}].[broken_reopens];",
                &self.schema,
            ),
        )
        .await
    }

    async fn teardown(&self) -> anyhow::Result<()> {
        self.others
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.mend().await?;
        run_batch(&self.queue, &drop_batch(&self.schema)?).await
    }
}

/// A row lock held by a transaction of the test's.
struct RowLock(MsSqlTransaction);

#[async_trait]
impl HeldLock for RowLock {
    async fn release(self: Box<Self>) -> anyhow::Result<()> {
        self.0.rollback().await?;
        Ok(())
    }
}

impl MsSqlFixture {
    async fn insert_effect(
        &self,
        tx: &mut MsSqlTransaction,
        marker: &str,
    ) -> queue_core::Result<()> {
        let sql = in_schema(
            "INSERT INTO [{schema}].[effects] (marker) VALUES (@P1)",
            &self.schema,
        );
        tx.client()
            .execute(sql, &[&marker])
            .await
            .map_err(hook_error)?;
        Ok(())
    }
}

#[async_trait]
impl Transactions for MsSqlFixture {
    async fn push_in_tx(
        &self,
        job: NewJob,
        marker: &str,
        commit: bool,
    ) -> queue_core::Result<JobId> {
        let mut tx = self.queue.begin().await?;
        self.insert_effect(&mut tx, marker).await?;
        let id = self.queue.push_in_tx(&mut tx, job).await?;
        if commit {
            tx.commit().await.map_err(hook_error)?;
        } else {
            tx.rollback().await.map_err(hook_error)?;
        }
        Ok(id)
    }

    async fn push_batch_in_tx(
        &self,
        jobs: Vec<NewJob>,
        marker: &str,
    ) -> queue_core::Result<Vec<JobId>> {
        let mut tx = self.queue.begin().await?;
        self.insert_effect(&mut tx, marker).await?;
        let pushed = self.queue.push_batch_in_tx(&mut tx, jobs).await;
        tx.commit().await.map_err(hook_error)?;
        pushed
    }

    async fn push_workflow_in_tx(
        &self,
        workflow: queue_core::Workflow,
        marker: &str,
        commit: bool,
    ) -> queue_core::Result<queue_core::PushedWorkflow> {
        let mut tx = self.queue.begin().await?;
        self.insert_effect(&mut tx, marker).await?;
        let pushed = self.queue.push_workflow_in_tx(&mut tx, workflow).await?;
        if commit {
            tx.commit().await.map_err(hook_error)?;
        } else {
            tx.rollback().await.map_err(hook_error)?;
        }
        Ok(pushed)
    }

    async fn complete_in_tx(&self, lease: &Lease, marker: &str) -> queue_core::Result<()> {
        let mut tx = self.queue.begin().await?;
        self.insert_effect(&mut tx, marker).await?;
        match self.queue.complete_in_tx(&mut tx, lease).await {
            Ok(()) => tx.commit().await.map_err(hook_error),
            Err(e) => {
                tx.rollback().await.map_err(hook_error)?;
                Err(e)
            }
        }
    }

    async fn effects(&self, marker: &str) -> anyhow::Result<u64> {
        let sql = in_schema(
            "SELECT COUNT_BIG(*) FROM [{schema}].[effects] WHERE marker = @P1",
            &self.schema,
        );
        Ok(u64::try_from(scalar(&self.queue, &sql, &[marker]).await?)?)
    }
}

// ---------------------------------------------------------------------------------------------
// SQL Server's own tests

/// A migrated queue in a fresh schema on `server`, set up by `f`.
async fn fresh(
    server: &Server,
    f: impl FnOnce(MsSqlQueueBuilder) -> MsSqlQueueBuilder,
) -> anyhow::Result<MsSqlQueue> {
    let q = f(builder(&server.url, &format!("t{}", random_suffix())))
        .connect()
        .await?;
    q.migrate().await?;
    Ok(q)
}

/// The error history keeps exactly the newest entries at any bound, through every statement
/// that appends one (see `conformance_tests::statements`): on SQL Server the only run of the
/// string functions that append and trim it.
async fn the_error_history_keeps_the_newest_entries(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    conformance_tests::statements::error_history_keeps_the_newest(&q).await?;
    drop_schema(&q).await
}

/// Drops every table of `q`'s schema, then the schema (see [`drop_batch`]).
async fn drop_schema(q: &MsSqlQueue) -> anyhow::Result<()> {
    run_batch(q, &drop_batch(q.schema())?).await
}

async fn count(q: &MsSqlQueue, condition: &str) -> anyhow::Result<i64> {
    let sql = format!("SELECT COUNT_BIG(*) FROM [{{schema}}].[jobs] WHERE {condition}");
    scalar(q, &in_schema(&sql, q.schema()), &[]).await
}

fn job(queue: &str, n: u64) -> NewJob {
    NewJob::new(queue, &serde_json::json!({ "n": n })).expect("a JSON value serializes")
}

/// Capabilities, the server's clock, and the session settings every pooled session has.
async fn capabilities_and_session(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let caps = q.capabilities();
    ensure!(caps.dialect == Dialect::MsSql);
    ensure!(caps.claim == ClaimStrategy::SkipLocked);
    ensure!(caps.time_precision == Duration::from_micros(1));
    // The version first (`16.0.4135.4 (Developer Edition (64-bit))`), as every backend gives it.
    let version = caps.server_version.as_deref().unwrap_or_default();
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .with_context(|| format!("server_version {version:?}"))?;
    ensure!(major >= 13, "server_version {version:?}");
    let db_now = q.now().await?;
    ensure!((db_now - chrono::Utc::now()).num_seconds().abs() < 5);
    // 2 = READ COMMITTED; the ANSI options filtered indexes need; implicit transactions off.
    let iso = scalar(
        &q,
        "SELECT CAST(transaction_isolation_level AS BIGINT) FROM sys.dm_exec_sessions WHERE session_id = @@SPID",
        &[],
    )
    .await?;
    ensure!(iso == 2, "isolation level {iso}");
    let options = scalar(&q, "SELECT CAST(@@OPTIONS AS BIGINT)", &[]).await?;
    // IMPLICIT_TRANSACTIONS 2, ANSI_WARNINGS 8, ANSI_PADDING 16, ANSI_NULLS 32, ARITHABORT 64,
    // QUOTED_IDENTIFIER 256, CONCAT_NULL_YIELDS_NULL 4096, NUMERIC_ROUNDABORT 8192, XACT_ABORT
    // 16384, NOCOUNT 512.
    ensure!(
        options & (8 | 16 | 32 | 64 | 256 | 4096) == 8 | 16 | 32 | 64 | 256 | 4096,
        "@@OPTIONS {options}"
    );
    ensure!(
        options & (2 | 512 | 8192 | 16384) == 0,
        "@@OPTIONS {options}"
    );
    drop_schema(&q).await
}

/// Settings are checked before connecting; a closed port is Unavailable with its address and
/// without the password.
async fn bad_settings_and_unreachable_servers(server: Server) -> anyhow::Result<()> {
    let field = |r: queue_core::Result<MsSqlQueue>| match r {
        Err(Error::InvalidInput { field, .. }) => Ok(field),
        other => Err(anyhow::anyhow!("expected InvalidInput, got {other:?}")),
    };
    let url = &server.url;
    ensure!(
        field(
            MsSqlQueue::builder(url)
                .schema("bad-schema;")
                .connect()
                .await
        )? == "schema"
    );
    ensure!(
        field(
            MsSqlQueue::builder(url)
                .claim_strategy(ClaimStrategy::WriteLock)
                .connect()
                .await
        )? == "claim_strategy"
    );
    let wide = Limits {
        max_pop: 5_000,
        ..Limits::default()
    };
    ensure!(field(MsSqlQueue::builder(url).limits(wide).connect().await)? == "limits.max_pop");
    conformance_tests::expect_refused_connection(|| {
        MsSqlQueue::builder("mssql://sa:hunter2@127.0.0.1:1/queue_test")
            .connect_timeout(Duration::from_millis(500))
            .connect()
    })
    .await
}

/// Batches beyond one statement (174 rows) are split inside one transaction: all stored, or
/// none when a row of the last chunk clashes; the clash names its key. ack_batch of 100.
async fn push_batch_is_chunked_and_atomic(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let jobs: Vec<_> = (0..1_234).map(|n| job("b", n)).collect();
    let want: Vec<_> = jobs.iter().map(|j| j.id()).collect();
    ensure!(q.push_batch(jobs).await? == want);
    ensure!(count(&q, "queue = N'b' AND state = N'pending'").await? == 1_234);
    q.push(job("c", 0).dedup_key("last")).await?;
    let mut jobs: Vec<_> = (0..1_100).map(|n| job("c", n)).collect();
    jobs.push(job("c", 9).dedup_key("last"));
    match q.push_batch(jobs).await {
        Err(Error::Duplicate { queue, dedup_key }) => ensure!(queue == "c" && dedup_key == "last"),
        other => bail!("expected Duplicate, got {other:?}"),
    }
    ensure!(count(&q, "queue = N'c'").await? == 1);
    let leased = q.pop(PopRequest::new("b").limit(100)).await?;
    ensure!(leased.len() == 100);
    q.ack(&leased[0].lease).await?;
    let leases: Vec<_> = leased.iter().map(|l| l.lease.clone()).collect();
    ensure!(q.ack_batch(&leases).await? == 99);
    ensure!(count(&q, "state = N'completed'").await? == 100);
    drop_schema(&q).await
}

/// A caller's transaction dropped without commit or rollback: its session is closed, not
/// pooled, so the push it made is rolled back and the pool goes on working.
async fn an_abandoned_transaction_is_rolled_back(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b.max_connections(1)).await?;
    let mut tx = q.begin().await?;
    q.push_in_tx(&mut tx, job("abandoned", 1)).await?;
    drop(tx);
    ensure!(count(&q, "queue = N'abandoned'").await? == 0);
    q.push(job("after", 1)).await?;
    ensure!(count(&q, "queue = N'after'").await? == 1);
    drop_schema(&q).await
}

/// The claim seeks the filtered index `jobs_claim_idx` in claim order: its plan has an index
/// seek on it and no Sort (a sort would U-lock every due row before choosing).
async fn the_claim_seeks_the_filtered_index(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    q.push_batch(
        (0..200)
            .map(|n| job("x", n).priority((n % 4) as i32))
            .collect(),
    )
    .await?;
    let claim = load(
        include_str!("../../queue-mssql/queries/job_claim.sql"),
        &[("{schema}", q.schema())],
    );
    let batch = format!(
        "DECLARE @P1 NVARCHAR(4000) = N'x', @P2 BIGINT = 10, @P3 INT = 30, @P4 INT = 0, \
         @P5 NVARCHAR(4000) = N'w', @P6 BIT = 0;\n{claim}"
    );
    let mut tx = q.begin().await?;
    let client = tx.client();
    client
        .simple_query("SET SHOWPLAN_XML ON")
        .await?
        .into_results()
        .await?;
    let plan = client.simple_query(batch).await?.into_results().await;
    client
        .simple_query("SET SHOWPLAN_XML OFF")
        .await?
        .into_results()
        .await?;
    tx.rollback().await?;
    let xml: String = plan?
        .iter()
        .flatten()
        .flat_map(|r| r.cells().map(|(_, cell)| cell.clone()).collect::<Vec<_>>())
        .filter_map(|cell| match cell {
            // The plan comes as text or as xml, depending on the server.
            ColumnData::String(Some(s)) => Some(s.into_owned()),
            ColumnData::Xml(Some(x)) => Some(x.into_owned().into_string()),
            _ => None,
        })
        .collect();
    ensure!(
        xml.contains("Index=\"[jobs_claim_idx]\""),
        "no jobs_claim_idx in {xml}"
    );
    ensure!(
        xml.contains("PhysicalOp=\"Index Seek\""),
        "no seek in {xml}"
    );
    ensure!(
        !xml.contains("PhysicalOp=\"Sort\""),
        "the claim sorts: {xml}"
    );
    drop_schema(&q).await
}

/// Whether job `id` of `q` has a unique key, and whether it holds it (`unique_live` equals the
/// key); `unique_live` that is neither NULL nor the key fails the test.
async fn unique_columns(q: &MsSqlQueue, id: JobId) -> anyhow::Result<(bool, bool)> {
    let sql = in_schema(
        "SELECT CAST(CASE WHEN unique_key IS NULL THEN 0 ELSE 1 END AS INT) AS has_key, \
         CAST(CASE WHEN unique_live IS NULL THEN 0 WHEN unique_live = unique_key THEN 1 \
         ELSE 2 END AS INT) AS live \
         FROM [{schema}].[jobs] WHERE id = CAST(@P1 AS BINARY(16))",
        q.schema(),
    );
    let mut tx = q.begin().await?;
    let mut query = Query::new(sql);
    query.bind(id.0.as_bytes().to_vec());
    let row = query
        .query(tx.client())
        .await?
        .into_row()
        .await?
        .with_context(|| format!("no row for job {id}"))?;
    let has_key = row.try_get::<i32, _>("has_key")?.unwrap_or(-1);
    let live = row.try_get::<i32, _>("live")?.unwrap_or(-1);
    tx.commit().await?;
    ensure!(
        live != 2,
        "job {id}: unique_live is neither NULL nor its key"
    );
    Ok((has_key == 1, live == 1))
}

/// `unique_live` as every statement keeps it (migration 0005): the job's key exactly while its
/// state is in its rule's states, else NULL; a job without a rule has no key. Checked in the
/// table after each transition that can change it: completion (one and a batch), failure and
/// rescue to dead, rescue to pending, cancel, and retry back to pending.
async fn unique_live_is_the_key_while_the_state_holds_it(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let index = scalar(
        &q,
        &in_schema(
            "SELECT COUNT_BIG(*) FROM sys.indexes WHERE object_id = OBJECT_ID(N'[{schema}].[jobs]') \
             AND name = N'jobs_unique_idx' AND is_unique = 1 AND has_filter = 1",
            q.schema(),
        ),
        &[],
    )
    .await?;
    ensure!(
        index == 1,
        "jobs_unique_idx is missing or not a filtered unique index"
    );
    let default = Unique::new().by_args();
    let live_only = Unique::new()
        .by_args()
        .states([JobState::Pending, JobState::Running]);
    let with = |state: JobState| {
        Unique::new()
            .by_args()
            .states([JobState::Pending, JobState::Running, state])
    };
    let push = |queue: &'static str, n: u64, rule: Option<Unique>| {
        let q = q.clone();
        async move {
            let j = job(queue, n).kind("sync");
            let j = match rule {
                Some(rule) => j.unique(rule),
                None => j,
            };
            let outcome = q.push_outcome(j).await?;
            ensure!(outcome.inserted(), "{queue} {n}: {outcome:?}");
            anyhow::Ok(outcome.id())
        }
    };
    let pop1 = |queue: &'static str, lease: Duration| {
        let q = q.clone();
        async move {
            let mut leased = q.pop(PopRequest::new(queue).lease(lease)).await?;
            ensure!(leased.len() == 1, "{queue}: {} claimed", leased.len());
            anyhow::Ok(leased.remove(0))
        }
    };
    let long = Duration::from_secs(300);

    // No rule: no key.
    let plain = push("ul.plain", 0, None).await?;
    ensure!(unique_columns(&q, plain).await? == (false, false));

    // Pending and running hold the key; completed holds it only when it is in the states.
    let a = push("ul.done", 1, Some(default.clone())).await?;
    ensure!(unique_columns(&q, a).await? == (true, true), "pending");
    let l = pop1("ul.done", long).await?;
    ensure!(unique_columns(&q, a).await? == (true, true), "running");
    q.ack(&l.lease).await?;
    ensure!(
        unique_columns(&q, a).await? == (true, true),
        "completed, kept"
    );
    let b = push("ul.done", 2, Some(live_only.clone())).await?;
    q.ack(&pop1("ul.done", long).await?.lease).await?;
    ensure!(
        unique_columns(&q, b).await? == (true, false),
        "completed, freed"
    );
    // The same through a batch acknowledgement.
    let c = push("ul.done", 3, Some(default.clone())).await?;
    let d = push("ul.done", 4, Some(live_only.clone())).await?;
    let leases: Vec<Lease> = q
        .pop(PopRequest::new("ul.done").limit(2).lease(long))
        .await?
        .into_iter()
        .map(|l| l.lease)
        .collect();
    ensure!(q.ack_batch(&leases).await? == 2);
    ensure!(unique_columns(&q, c).await? == (true, true), "batch, kept");
    ensure!(
        unique_columns(&q, d).await? == (true, false),
        "batch, freed"
    );

    // Dead: freed unless dead is in the states; a retry takes the key back.
    let e = push("ul.dead", 5, Some(default.clone())).await?;
    q.fail(&pop1("ul.dead", long).await?.lease, Failure::permanent("x"))
        .await?;
    ensure!(unique_columns(&q, e).await? == (true, false), "dead, freed");
    q.retry(e).await?;
    ensure!(unique_columns(&q, e).await? == (true, true), "retried");
    let f = push("ul.dead2", 6, Some(with(JobState::Dead))).await?;
    q.fail(
        &pop1("ul.dead2", long).await?.lease,
        Failure::permanent("x"),
    )
    .await?;
    ensure!(unique_columns(&q, f).await? == (true, true), "dead, kept");

    // Rescue of an expired lease: to dead (no attempt left) frees the key unless dead is in
    // the states; back to pending keeps it.
    let g = q
        .push(
            job("ul.rescue", 7)
                .kind("sync")
                .max_attempts(1)
                .unique(default.clone()),
        )
        .await?;
    let h = q
        .push(
            job("ul.rescue2", 8)
                .kind("sync")
                .max_attempts(1)
                .unique(with(JobState::Dead)),
        )
        .await?;
    let i = q
        .push(
            job("ul.rescue3", 9)
                .kind("sync")
                .max_attempts(3)
                .unique(default.clone()),
        )
        .await?;
    let short = Duration::from_millis(50);
    pop1("ul.rescue", short).await?;
    pop1("ul.rescue2", short).await?;
    pop1("ul.rescue3", short).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    ensure!(q.rescue_expired().await? == 3);
    for (id, state, held) in [
        (g, JobState::Dead, false),
        (h, JobState::Dead, true),
        (i, JobState::Pending, true),
    ] {
        let got = q.get(id).await?.context("a rescued job")?.state;
        ensure!(got == state, "rescued {id}: {got:?}");
        ensure!(
            unique_columns(&q, id).await? == (true, held),
            "rescued to {state:?}"
        );
    }

    // Cancelled: freed unless cancelled is in the states.
    let k = push("ul.cancel", 10, Some(default)).await?;
    q.cancel(k).await?;
    ensure!(
        unique_columns(&q, k).await? == (true, false),
        "cancelled, freed"
    );
    let m = push("ul.cancel", 11, Some(with(JobState::Cancelled))).await?;
    q.cancel(m).await?;
    ensure!(
        unique_columns(&q, m).await? == (true, true),
        "cancelled, kept"
    );

    // Nothing else holds a key: the held rows are exactly the ones above.
    ensure!(count(&q, "unique_live IS NOT NULL").await? == 7);
    drop_schema(&q).await
}

/// The plan SQL Server would run for `batch` (SHOWPLAN_XML: compiled, not executed), every
/// statement's plan joined.
async fn plan_of(q: &MsSqlQueue, batch: String) -> anyhow::Result<String> {
    let mut tx = q.begin().await?;
    let client = tx.client();
    client
        .simple_query("SET SHOWPLAN_XML ON")
        .await?
        .into_results()
        .await?;
    let plan = client.simple_query(batch).await?.into_results().await;
    client
        .simple_query("SET SHOWPLAN_XML OFF")
        .await?
        .into_results()
        .await?;
    tx.rollback().await?;
    Ok(plan?
        .iter()
        .flatten()
        .flat_map(|r| r.cells().map(|(_, cell)| cell.clone()).collect::<Vec<_>>())
        .filter_map(|cell| match cell {
            ColumnData::String(Some(s)) => Some(s.into_owned()),
            ColumnData::Xml(Some(x)) => Some(x.into_owned().into_string()),
            _ => None,
        })
        .collect())
}

/// `stats` counts finished jobs along `jobs_finished_queue_idx` (migration 6) and finds the
/// queues by seeks, in one request: the plan of `job_stats` seeks that index and the claim
/// index and never reads the clustered index (every row); the counts it returns are capped.
async fn stats_seek_the_finished_queue_index(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| {
        b.limits(Limits {
            stats_count_cap: Some(50),
            ..Limits::default()
        })
    })
    .await?;
    let filtered = scalar(
        &q,
        &in_schema(
            "SELECT COUNT_BIG(*) FROM sys.indexes WHERE object_id = OBJECT_ID(N'[{schema}].[jobs]') \
             AND name = N'jobs_finished_queue_idx' AND has_filter = 1",
            q.schema(),
        ),
        &[],
    )
    .await?;
    ensure!(
        filtered == 1,
        "jobs_finished_queue_idx is missing or not filtered"
    );
    for queue in ["st.a", "st.b", "st.c"] {
        q.push_batch((0..120).map(|n| job(queue, n)).collect())
            .await?;
        let leases: Vec<Lease> = q
            .pop(PopRequest::new(queue).limit(100))
            .await?
            .into_iter()
            .map(|l| l.lease)
            .collect();
        ensure!(q.ack_batch(&leases).await? == 100);
    }
    let running = q.pop(PopRequest::new("st.b").limit(5)).await?;
    ensure!(running.len() == 5);
    let all = q.stats(None).await?;
    let got: Vec<(&str, u64, u64, u64)> = all
        .iter()
        .map(|s| (s.queue.as_str(), s.available, s.running, s.completed))
        .collect();
    ensure!(
        got == [
            ("st.a", 20, 0, 50),
            ("st.b", 15, 5, 50),
            ("st.c", 20, 0, 50)
        ],
        "{all:?}"
    );
    let stats = load(
        include_str!("../../queue-mssql/queries/job_stats.sql"),
        &[("{schema}", q.schema())],
    );
    let xml = plan_of(
        &q,
        format!("DECLARE @P1 NVARCHAR(4000) = NULL, @P2 BIGINT = 50;\n{stats}"),
    )
    .await?;
    for index in ["jobs_finished_queue_idx", "jobs_claim_idx"] {
        ensure!(
            xml.contains(&format!("Index=\"[{index}]\"")),
            "no {index} in {xml}"
        );
    }
    ensure!(
        xml.contains("PhysicalOp=\"Index Seek\""),
        "no seek in {xml}"
    );
    ensure!(
        !xml.contains("Index=\"[jobs_pkey]\""),
        "job_stats reads the clustered index: {xml}"
    );
    drop_schema(&q).await
}

/// Migration 6 again over a migrated schema changes nothing (each step is guarded): one
/// retention row, due, without a holder.
async fn the_maintenance_migration_is_guarded(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let sql = load(
        include_str!("../../queue-mssql/migrations/0006_maintenance.sql"),
        &[("{schema}", q.schema())],
    );
    run_batch(&q, &sql).await?;
    let rows = scalar(
        &q,
        &in_schema(
            "SELECT COUNT_BIG(*) FROM [{schema}].[maintenance] WHERE task = N'retention' \
             AND token IS NULL AND next_at <= SYSUTCDATETIME()",
            q.schema(),
        ),
        &[],
    )
    .await?;
    ensure!(rows == 1, "{rows} due retention rows");
    let all = scalar(
        &q,
        &in_schema(
            "SELECT COUNT_BIG(*) FROM [{schema}].[maintenance]",
            q.schema(),
        ),
        &[],
    )
    .await?;
    ensure!(all == 1, "{all} maintenance rows");
    drop_schema(&q).await
}

/// The first column of each row of `sql` with `params`, as text.
async fn strings(q: &MsSqlQueue, sql: &str, params: &[&str]) -> anyhow::Result<Vec<String>> {
    let mut tx = q.begin().await?;
    let mut query = Query::new(sql);
    for p in params {
        query.bind(*p);
    }
    let rows = query.query(tx.client()).await?.into_first_result().await?;
    tx.commit().await?;
    rows.iter()
        .map(|r| Ok(r.try_get::<&str, _>(0)?.unwrap_or_default().to_owned()))
        .collect()
}

/// The schema as the migrations declare it: the columns that the ALTER TABLE ... ADDs of
/// migrations 4 to 11 add one each, in order, with their types, lengths and nullability; every
/// check constraint trusted (one added without WITH CHECK is checked against the rows all the
/// same), the state check allowing `waiting`; the defaults named; and job_deps_job_idx
/// nonclustered and not unique, over (job_id, dep_id).
async fn the_schema_is_what_the_migrations_declare(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let table = |t: &str| format!("[{}].[{t}]", q.schema());
    let columns = |t: String, after: &'static str| {
        let q = &q;
        async move {
            strings(
                q,
                "SELECT c.name + N' ' + TYPE_NAME(c.user_type_id) + N' ' \
                 + CAST(c.max_length AS NVARCHAR(10)) \
                 + CASE WHEN c.is_nullable = 1 THEN N' NULL' ELSE N' NOT NULL' END \
                 + CASE WHEN c.collation_name = N'Latin1_General_100_BIN2' THEN N' BIN2' \
                 ELSE N'' END \
                 FROM sys.columns AS c WHERE c.object_id = OBJECT_ID(@P1) \
                 AND c.column_id > COLUMNPROPERTY(OBJECT_ID(@P1), @P2, 'ColumnId') \
                 ORDER BY c.column_id",
                &[&t, after],
            )
            .await
        }
    };
    let jobs = columns(table("jobs"), "finished_at").await?;
    ensure!(
        jobs == [
            "kind nvarchar 256 NULL BIN2",
            "meta nvarchar -1 NULL",
            "timeout_us bigint 8 NULL",
            "snoozes int 4 NULL",
            "errors nvarchar -1 NULL BIN2",
            "output nvarchar -1 NULL",
            "unique_key varbinary 32 NULL",
            "unique_states smallint 2 NULL",
            "unique_live varbinary 32 NULL",
            "concurrency_key varbinary 800 NULL",
            "workflow_id binary 16 NULL",
            "blocked_by binary 16 NULL",
        ],
        "jobs after finished_at: {jobs:?}"
    );
    let queues = columns(table("queues"), "updated_at").await?;
    ensure!(
        queues
            == [
                "rate_limit int 4 NULL",
                "rate_period_us bigint 8 NULL",
                "rate_window bigint 8 NULL",
                "rate_count int 4 NOT NULL",
                "key_limit int 4 NULL",
                "fair_shares bit 1 NOT NULL",
                "key_cursor varbinary 800 NULL",
                "key_rate_limit int 4 NULL",
                "key_rate_period_us bigint 8 NULL",
            ],
        "queues after updated_at: {queues:?}"
    );
    let checks = strings(
        &q,
        "SELECT name + CASE WHEN is_not_trusted = 1 OR is_disabled = 1 THEN N' untrusted' \
         ELSE N'' END FROM sys.check_constraints \
         WHERE parent_object_id IN (OBJECT_ID(@P1), OBJECT_ID(@P2)) ORDER BY name",
        &[&table("jobs"), &table("queues")],
    )
    .await?;
    ensure!(
        checks
            == [
                "jobs_state_check",
                "queues_concurrency_limit_check",
                "queues_key_limit_check",
                "queues_key_rate_limit_check",
                "queues_key_rate_period_check",
                "queues_rate_limit_check",
                "queues_rate_period_check",
            ],
        "check constraints: {checks:?}"
    );
    let state = strings(
        &q,
        "SELECT definition FROM sys.check_constraints WHERE name = N'jobs_state_check' \
         AND parent_object_id = OBJECT_ID(@P1)",
        &[&table("jobs")],
    )
    .await?;
    ensure!(
        state.len() == 1 && state[0].contains("N'waiting'") && state[0].contains("N'cancelled'"),
        "{state:?}"
    );
    let defaults = strings(
        &q,
        "SELECT name FROM sys.default_constraints WHERE parent_object_id = OBJECT_ID(@P1) \
         ORDER BY name",
        &[&table("queues")],
    )
    .await?;
    ensure!(
        defaults
            == [
                "queues_fair_shares_default",
                "queues_paused_default",
                "queues_rate_count_default",
                "queues_updated_at_default",
            ],
        "defaults: {defaults:?}"
    );
    let index = strings(
        &q,
        "SELECT i.type_desc + N' ' + CAST(i.is_unique AS NVARCHAR(1)) + N' ' \
         + COL_NAME(ic.object_id, ic.column_id) \
         FROM sys.indexes AS i INNER JOIN sys.index_columns AS ic \
         ON ic.object_id = i.object_id AND ic.index_id = i.index_id \
         WHERE i.object_id = OBJECT_ID(@P1) AND i.name = N'job_deps_job_idx' \
         ORDER BY ic.key_ordinal",
        &[&table("job_deps")],
    )
    .await?;
    ensure!(
        index == ["NONCLUSTERED 0 job_id", "NONCLUSTERED 0 dep_id"],
        "job_deps_job_idx: {index:?}"
    );
    drop_schema(&q).await
}

/// Bulk cancel and retry keep `unique_live` as their single-job statements do: a bulk cancel
/// frees a key unless cancelled is in its rule's states, a bulk retry takes it back, and a
/// retry whose key another job took meanwhile (the batch fails with 2601 as a whole; the
/// engine goes job by job) is skipped and leaves the holder alone.
async fn bulk_operations_keep_unique_live(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let default = Unique::new().by_args();
    let kept =
        Unique::new()
            .by_args()
            .states([JobState::Pending, JobState::Running, JobState::Cancelled]);
    let a = q.push(job("bu.q", 1).unique(default.clone())).await?;
    let b = q.push(job("bu.q", 2).unique(kept)).await?;
    let plain = q.push(job("bu.q", 3)).await?;
    let all = JobFilter {
        queue: Some("bu.q".into()),
        ..JobFilter::default()
    };
    let cancelled = q.bulk(BulkAction::Cancel, &all).await?;
    ensure!(cancelled.changed == 3, "{cancelled:?}");
    ensure!(
        unique_columns(&q, a).await? == (true, false),
        "cancelled, freed"
    );
    ensure!(
        unique_columns(&q, b).await? == (true, true),
        "cancelled, kept"
    );
    ensure!(unique_columns(&q, plain).await? == (false, false));
    let retried = q.bulk(BulkAction::Retry, &all).await?;
    ensure!(retried.changed == 3, "{retried:?}");
    for id in [a, b] {
        ensure!(unique_columns(&q, id).await? == (true, true), "retried");
        let state = q.get(id).await?.context("a retried job")?.state;
        ensure!(state == JobState::Pending, "{id}: {state:?}");
    }
    // a's key taken by a new job while a is cancelled: the batch retry skips a.
    q.cancel(a).await?;
    let holder = q.push(job("bu.q", 1).unique(default)).await?;
    ensure!(holder != a, "the key was not free after the cancel");
    let only_cancelled = JobFilter {
        state: Some(JobState::Cancelled),
        ..all.clone()
    };
    let retried = q.bulk(BulkAction::Retry, &only_cancelled).await?;
    ensure!(
        retried
            == BulkOutcome {
                changed: 0,
                skipped: 1
            },
        "{retried:?}"
    );
    ensure!(unique_columns(&q, a).await? == (true, false), "skipped");
    ensure!(unique_columns(&q, holder).await? == (true, true), "holder");
    let state = q.get(a).await?.context("the skipped job")?.state;
    ensure!(state == JobState::Cancelled, "{state:?}");
    ensure!(count(&q, "unique_live IS NOT NULL").await? == 2);
    drop_schema(&q).await
}

/// The teardown drops every table that a migration creates (the migrations table and the
/// fixture's own too), and the schema last: a table left behind would make `DROP SCHEMA` fail
/// and leak the case's schema. Runs without a server.
fn the_teardown_drops_every_table_the_migrations_create() -> anyhow::Result<()> {
    let batch = drop_batch("t0")?;
    let drops: Vec<&str> = batch.split("; ").collect();
    ensure!(
        drops.last() == Some(&"DROP SCHEMA IF EXISTS [t0];"),
        "the schema is not dropped last: {batch}"
    );
    for (name, text) in migration_files()? {
        // Every CREATE TABLE of the file, which the parser reads or refuses.
        for table in created_tables(&text).with_context(|| name.clone())? {
            ensure!(
                drops.contains(&format!("DROP TABLE IF EXISTS [t0].[{table}]").as_str()),
                "{name} creates {table}, which the teardown does not drop: {batch}"
            );
        }
    }
    // What the migrations made so far, each dropped once.
    for table in [
        "effects",
        "jobs",
        "queues",
        "schedules",
        "maintenance",
        "queue_key_rates",
        "workflows",
        "workflow_jobs",
        "job_deps",
        "migrations",
    ] {
        let drop = format!("DROP TABLE IF EXISTS [t0].[{table}]");
        ensure!(
            drops.iter().filter(|d| **d == drop).count() == 1,
            "{table} is not dropped once: {batch}"
        );
    }
    // A table created in another form is refused, not missed.
    ensure!(created_tables("CREATE TABLE dbo.other (a INT)").is_err());
    ensure!(
        created_tables("IF 1 = 1 EXEC(N'CREATE TABLE [{schema}].[later] (a INT)')")? == ["later"]
    );
    Ok(())
}

fn main() -> ExitCode {
    let harnesses: Vec<Arc<dyn Harness>> = [ClaimStrategy::SkipLocked, ClaimStrategy::Optimistic]
        .into_iter()
        .map(|claim| Arc::new(MsSqlHarness { claim }) as Arc<dyn Harness>)
        .collect();
    run_suite_with(
        "mssql",
        harnesses,
        dialect_tests![
            the_error_history_keeps_the_newest_entries,
            capabilities_and_session,
            bad_settings_and_unreachable_servers,
            push_batch_is_chunked_and_atomic,
            an_abandoned_transaction_is_rolled_back,
            the_claim_seeks_the_filtered_index,
            unique_live_is_the_key_while_the_state_holds_it,
            stats_seek_the_finished_queue_index,
            the_maintenance_migration_is_guarded,
            bulk_operations_keep_unique_live,
            the_schema_is_what_the_migrations_declare,
        ],
        local_tests![the_teardown_drops_every_table_the_migrations_create],
    )
}
