//! The conformance suite on SQLite (a fresh temporary database file per case, both claim
//! strategies), and what is SQLite's own: file paths and URLs, in-memory databases, the busy
//! timeout, the claim's query plan.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use async_trait::async_trait;
use conformance_tests::{Discovery, Namespace, Server, SqlBackend, TestConfig};
use queue_core::{ClaimStrategy, Error, JobId, JobState, Lease, NewJob, PopRequest, Queue};
use queue_sqlite::SqliteQueue;
use sqlx::{Sqlite, Transaction};

struct Backend;

async fn open(path: &str, config: &TestConfig) -> queue_core::Result<SqliteQueue> {
    SqliteQueue::builder(path)
        .claim_strategy(config.claim)
        .retry_policy(config.retry.clone())
        .limits(config.limits.clone())
        .keep_completed_jobs(config.keep_completed)
        .connect()
        .await
}

#[async_trait]
impl SqlBackend for Backend {
    type Db = Sqlite;
    type Queue = SqliteQueue;
    const NAME: &'static str = "sqlite";
    const CLAIMS: &'static [ClaimStrategy] = &[ClaimStrategy::WriteLock, ClaimStrategy::Optimistic];

    async fn servers() -> Discovery {
        Discovery::Servers(vec![Server::new("temporary file", "")])
    }

    fn namespace(_server: &Server) -> anyhow::Result<Namespace> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("queue.db").to_string_lossy().into_owned();
        Ok(Namespace {
            name: path,
            keep: Some(dir),
        })
    }

    async fn connect(
        _server: &Server,
        ns: &str,
        config: &TestConfig,
    ) -> queue_core::Result<SqliteQueue> {
        open(ns, config).await
    }

    async fn unreachable(config: &TestConfig) -> queue_core::Result<SqliteQueue> {
        open(
            "/nonexistent-directory-for-queue-tests/sub/queue.db",
            config,
        )
        .await
    }

    async fn seed_previous_release(
        q: &SqliteQueue,
        _ns: &str,
    ) -> anyhow::Result<Option<Vec<(JobId, JobState)>>> {
        use queue_core::Backend as _;
        // Migration 3 (schedules) was the newest before job kinds.
        q.engine().migrate_until(3).await?;
        let now = chrono::Utc::now().timestamp_micros();
        let mut seeded = Vec::new();
        for (state, attempts, lease_left, worker, error, finished) in [
            ("pending", 0, None, None, None, false),
            (
                "running",
                1,
                Some(-1_000_000i64),
                Some("old-worker"),
                None,
                false,
            ),
            ("completed", 1, None, Some("old-worker"), None, true),
            ("dead", 3, None, Some("old-worker"), Some("boom"), true),
            ("cancelled", 0, None, None, None, true),
        ] {
            let id = JobId::new();
            sqlx::query(
                "INSERT INTO queue_jobs (id, queue, payload, priority, state, attempts, \
                 max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, \
                 dedup_key, version, created_at, updated_at, finished_at) \
                 VALUES (?, 'legacy', '{\"old\": true}', 0, ?, ?, 3, ?, ?, ?, ?, ?, NULL, 1, ?, ?, ?)",
            )
            .bind(id.0)
            .bind(state)
            .bind(attempts)
            .bind(now - 5_000_000)
            .bind(lease_left.map(|_| uuid::Uuid::new_v4()))
            .bind(lease_left.map(|d| now + d))
            .bind(worker)
            .bind(error)
            .bind(now - 5_000_000)
            .bind(now - 4_000_000)
            .bind(finished.then_some(now - 4_000_000))
            .execute(q.writer_pool())
            .await?;
            seeded.push((id, state.parse()?));
        }
        Ok(Some(seeded))
    }

    async fn migrate_previous_schema(q: &SqliteQueue) -> anyhow::Result<bool> {
        use queue_core::Backend as _;
        // Migration 12 merged the two indexes of finished jobs into one.
        q.engine().migrate_until(11).await?;
        Ok(true)
    }

    async fn create_effects(q: &SqliteQueue, _ns: &str) -> anyhow::Result<()> {
        sqlx::query("CREATE TABLE effects (marker TEXT NOT NULL)")
            .execute(q.writer_pool())
            .await?;
        Ok(())
    }

    async fn insert_effect(
        tx: &mut Transaction<'static, Sqlite>,
        _ns: &str,
        marker: &str,
    ) -> anyhow::Result<()> {
        sqlx::query("INSERT INTO effects (marker) VALUES (?)")
            .bind(marker)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    async fn count_effects(q: &SqliteQueue, _ns: &str, marker: &str) -> anyhow::Result<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM effects WHERE marker = ?")
            .bind(marker)
            .fetch_one(q.writer_pool())
            .await?;
        Ok(n as u64)
    }

    async fn begin(q: &SqliteQueue) -> queue_core::Result<Transaction<'static, Sqlite>> {
        q.begin().await
    }

    async fn push_in_tx(
        q: &SqliteQueue,
        tx: &mut Transaction<'static, Sqlite>,
        job: NewJob,
    ) -> queue_core::Result<JobId> {
        q.push_in_tx(tx, job).await
    }

    async fn push_batch_in_tx(
        q: &SqliteQueue,
        tx: &mut Transaction<'static, Sqlite>,
        jobs: Vec<NewJob>,
    ) -> queue_core::Result<Vec<JobId>> {
        q.push_batch_in_tx(tx, jobs).await
    }

    async fn push_workflow_in_tx(
        q: &SqliteQueue,
        tx: &mut Transaction<'static, Sqlite>,
        workflow: queue_core::Workflow,
    ) -> queue_core::Result<queue_core::PushedWorkflow> {
        q.push_workflow_in_tx(tx, workflow).await
    }

    async fn complete_in_tx(
        q: &SqliteQueue,
        tx: &mut Transaction<'static, Sqlite>,
        lease: &Lease,
    ) -> queue_core::Result<()> {
        q.complete_in_tx(tx, lease).await
    }

    async fn lock_job(
        tx: &mut Transaction<'static, Sqlite>,
        _ns: &str,
        id: JobId,
    ) -> anyhow::Result<()> {
        // A write: the caller's transaction takes SQLite's one write lock with it.
        sqlx::query("UPDATE queue_jobs SET version = version WHERE id = ?")
            .bind(id.0)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    async fn break_reopen(q: &SqliteQueue, _ns: &str, id: JobId) -> anyhow::Result<()> {
        sqlx::raw_sql(
            "CREATE TABLE IF NOT EXISTS broken_reopens (id BLOB NOT NULL PRIMARY KEY);
             CREATE TRIGGER IF NOT EXISTS broken_reopen BEFORE UPDATE OF state ON queue_jobs
             WHEN OLD.state = 'cancelled' AND NEW.state = 'waiting'
               AND EXISTS (SELECT 1 FROM broken_reopens b WHERE b.id = OLD.id)
             BEGIN SELECT RAISE(ABORT, 'a fault of the test: this step cannot wait again'); END;",
        )
        .execute(q.writer_pool())
        .await?;
        sqlx::query("INSERT INTO broken_reopens (id) VALUES (?)")
            .bind(id.0)
            .execute(q.writer_pool())
            .await?;
        Ok(())
    }

    async fn mend(q: &SqliteQueue, _ns: &str) -> anyhow::Result<()> {
        sqlx::raw_sql("DROP TRIGGER IF EXISTS broken_reopen; DROP TABLE IF EXISTS broken_reopens;")
            .execute(q.writer_pool())
            .await?;
        Ok(())
    }

    async fn drop_namespace(q: &SqliteQueue, _ns: &str) -> anyhow::Result<()> {
        // The file goes with its temporary directory.
        q.close().await;
        Ok(())
    }

    async fn close(q: &SqliteQueue) {
        q.close().await;
    }
}

async fn a_missing_directory_is_unavailable_quickly(_: Server) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("no/such/dir/queue.db");
    let t = Instant::now();
    let err = SqliteQueue::builder(format!("sqlite://{}", path.display()))
        .connect()
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("opened a file in a missing directory"))?;
    ensure!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    ensure!(t.elapsed() < Duration::from_secs(5));
    ensure!(!path.exists());
    Ok(())
}

async fn bad_settings_are_rejected(_: Server) -> anyhow::Result<()> {
    let field = |r: queue_core::Result<SqliteQueue>| match r {
        Err(Error::InvalidInput { field, rule }) => Ok((field, rule)),
        other => Err(anyhow::anyhow!("expected InvalidInput, got {other:?}")),
    };
    let (f, rule) = field(
        SqliteQueue::builder("sqlite://x.db")
            .claim_strategy(ClaimStrategy::SkipLocked)
            .connect()
            .await,
    )?;
    ensure!(
        f == "claim_strategy" && rule.contains("skip_locked"),
        "{f}: {rule}"
    );
    let (f, rule) = field(
        SqliteQueue::builder("postgres://u:secret@h/db")
            .connect()
            .await,
    )?;
    ensure!(f == "url" && !rule.contains("secret"), "{f}: {rule}");
    let (f, _) = field(
        SqliteQueue::builder("sqlite://x.db")
            .max_connections(0)
            .connect()
            .await,
    )?;
    ensure!(f == "max_connections");
    ensure!(
        !std::path::Path::new("x.db").exists(),
        "a refused setting created the file"
    );
    Ok(())
}

async fn every_spelling_of_a_path_opens_the_file(_: Server) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("spelled.db");
    let plain = SqliteQueue::builder(path.display().to_string())
        .connect()
        .await?;
    plain.migrate().await?;
    let id = plain.push(NewJob::new("q", &1)?).await?;
    ensure!(path.exists());
    for url in [
        format!("sqlite://{}", path.display()),
        format!("sqlite:{}", path.display()),
        format!("SQLite://{}", path.display()),
    ] {
        let q = SqliteQueue::builder(url).connect().await?;
        ensure!(q.get(id).await?.map(|j| j.id) == Some(id));
    }
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(plain.writer_pool())
        .await?;
    ensure!(mode == "wal", "journal mode {mode}");
    Ok(())
}

/// An in-memory database, spelled as a URL or as SQLite's bare `:memory:`: reads (which use
/// their own connections for a file) see the writer's database.
async fn in_memory_database_works(_: Server) -> anyhow::Result<()> {
    for target in ["sqlite::memory:", ":memory:"] {
        let q = SqliteQueue::builder(target).connect().await?;
        q.migrate().await?;
        let id = q.push(NewJob::new("q", &1)?).await?;
        ensure!(q.get(id).await?.map(|j| j.id) == Some(id), "{target}: get");
        let got = q.pop(PopRequest::new("q")).await?;
        ensure!(got.len() == 1, "{target}: {} claimed", got.len());
        q.ack(&got[0].lease).await?;
        let stats = q.stats(Some("q")).await?;
        ensure!(
            stats[0].count(queue_core::JobState::Completed) == 1,
            "{target}: stats {stats:?}"
        );
    }
    Ok(())
}

/// Single pushes that arrive together are written by one statement, and each keeps its own
/// outcome: of concurrent pushes sharing a dedup key exactly one is stored, the others get
/// `Duplicate`, and a key a live job already holds is refused for all of its pushes.
async fn concurrent_single_pushes_are_written_together_each_with_its_own_outcome(
    _: Server,
) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let q = std::sync::Arc::new(
        SqliteQueue::builder(dir.path().join("group.db").display().to_string())
            .connect()
            .await?,
    );
    q.migrate().await?;
    q.push(NewJob::new("g", &0)?.dedup_key("held")).await?;
    let mut pushes = tokio::task::JoinSet::new();
    for i in 0..96u32 {
        let q = q.clone();
        let key = match i % 3 {
            0 => None,
            1 => Some(format!("k{}", i % 8)),
            _ => Some("held".to_owned()),
        };
        pushes.spawn(async move {
            let job = NewJob::new("g", &i).expect("a number serializes");
            let job = match &key {
                Some(k) => job.dedup_key(k.clone()),
                None => job,
            };
            (key, q.push(job).await)
        });
    }
    let mut stored: std::collections::HashMap<Option<String>, u32> = Default::default();
    while let Some(joined) = pushes.join_next().await {
        let (key, outcome) = joined?;
        match outcome {
            Ok(_) => *stored.entry(key).or_default() += 1,
            Err(Error::Duplicate { dedup_key, .. }) => {
                ensure!(
                    key.as_deref() == Some(dedup_key.as_str()),
                    "{key:?} {dedup_key}"
                )
            }
            Err(e) => anyhow::bail!("push with key {key:?}: {e:?}"),
        }
    }
    ensure!(
        stored.get(&None) == Some(&32),
        "pushes without a key: {stored:?}"
    );
    ensure!(!stored.contains_key(&Some("held".into())), "{stored:?}");
    let keyed: u32 = stored
        .iter()
        .filter(|(k, _)| k.is_some())
        .map(|(_, n)| *n)
        .sum();
    ensure!(
        stored.iter().all(|(k, n)| k.is_none() || *n == 1),
        "one stored push per key: {stored:?}"
    );
    ensure!(keyed == 8, "eight keys, one job each: {stored:?}");
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM queue_jobs WHERE queue = 'g'")
        .fetch_one(q.writer_pool())
        .await?;
    ensure!(count == 1 + 32 + 8, "{count} rows");

    // Pushes without a clash: rows written by one statement share its timestamp.
    let mut pushes = tokio::task::JoinSet::new();
    for i in 0..64u32 {
        let q = q.clone();
        pushes.spawn(async move { q.push(NewJob::new("h", &i).expect("serializes")).await });
    }
    while let Some(joined) = pushes.join_next().await {
        joined??;
    }
    let (count, instants): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(DISTINCT created_at) FROM queue_jobs WHERE queue = 'h'",
    )
    .fetch_one(q.writer_pool())
    .await?;
    ensure!(count == 64, "{count} rows");
    ensure!(
        instants < count,
        "every push was written alone ({instants} distinct instants for {count} rows)"
    );
    Ok(())
}

/// The error history keeps exactly the newest entries at any bound, through every statement
/// that appends one (see `conformance_tests::statements`).
async fn the_error_history_keeps_the_newest_entries(_: Server) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("history.db").to_string_lossy().into_owned();
    let q = SqliteQueue::builder(&path).connect().await?;
    q.migrate().await?;
    conformance_tests::statements::error_history_keeps_the_newest(&q).await
}

/// A migrated queue on a new file `name` in `dir`.
async fn migrated_file(dir: &tempfile::TempDir, name: &str) -> anyhow::Result<SqliteQueue> {
    let q = SqliteQueue::builder(dir.path().join(name).display().to_string())
        .connect()
        .await?;
    q.migrate().await?;
    Ok(q)
}

/// The lines of `EXPLAIN QUERY PLAN` of `text`, its parameters unbound (as it is prepared).
async fn query_plan(q: &SqliteQueue, text: &str) -> anyhow::Result<Vec<String>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {text}")))
        .fetch_all(q.writer_pool())
        .await?;
    Ok(rows
        .iter()
        .map(|r| sqlx::Row::get::<String, _>(r, "detail"))
        .collect())
}

async fn the_claim_uses_the_partial_index(_: Server) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let q = migrated_file(&dir, "plan.db").await?;
    let detail = query_plan(
        &q,
        "SELECT rowid FROM queue_jobs \
         WHERE queue = ?1 AND state = 'pending' AND run_at <= ?2 \
         ORDER BY priority DESC, run_at, id LIMIT ?3",
    )
    .await?
    .join("\n");
    ensure!(detail.contains("queue_jobs_claim"), "{detail}");
    ensure!(
        !detail.contains("TEMP B-TREE"),
        "sorts instead of walking the index: {detail}"
    );
    Ok(())
}

/// Retention and stats find finished jobs along their one index: a range per queue and state,
/// the queues found by seeking from one to the next, never a scan of the index filtered by the
/// queue (the plans of the statements' exact text, with their parameters unbound, as the driver
/// prepares them).
async fn finished_jobs_are_found_along_their_index(_: Server) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let q = migrated_file(&dir, "finished.db").await?;
    let plan = |text: &str| {
        let text = queue_core::engine::statements::load(text, &[]);
        let q = &q;
        async move { anyhow::Ok(query_plan(q, &text).await?.join("\n")) }
    };
    let index = "queue_jobs_finished_by_queue";
    // A scan of the index is only ever the first queue's (ORDER BY queue LIMIT 1).
    let scans = |plan: &str| {
        plan.lines()
            .filter(|l| l.contains("SCAN") && l.contains("queue_jobs"))
            .count()
    };
    let prune = plan(include_str!("../../queue-sqlite/queries/job_prune.sql")).await?;
    // The given queue and the next queue are both seeks of a range starting at a queue.
    ensure!(
        prune.contains(&format!("{index} (queue=? AND state=? AND finished_at<?)"))
            && prune.matches(&format!("{index} (queue>?)")).count() == 2
            && prune.contains("INTEGER PRIMARY KEY (rowid=?)")
            && scans(&prune) == 1,
        "job_prune:\n{prune}"
    );
    let stats = plan(include_str!("../../queue-sqlite/queries/job_stats.sql")).await?;
    ensure!(
        stats
            .matches(&format!("{index} (queue=? AND state=?)"))
            .count()
            == 3
            && stats.matches(&format!("{index} (queue>?)")).count() == 2
            && stats
                .lines()
                .filter(|l| l.contains("SCAN") && l.contains(index))
                .count()
                == 1
            // One queue's pending jobs are a range of the claim index, not the whole index
            // filtered by the queue.
            && stats.contains("queue_jobs_claim (queue>? AND queue<?)"),
        "job_stats:\n{stats}"
    );
    Ok(())
}

/// Statistics gathered while no job was running or waiting (`ANALYZE`, or `PRAGMA optimize`,
/// which SQLite advises running now and then) record the partial indexes of running and waiting
/// jobs as empty, and the finished jobs as one queue's. Every statement of a job's life still
/// finds its rows by key then: none reads every running, waiting or finished job, nor the list
/// of rows it was given once per row (the plans of the statements' exact text, lists of 60,
/// after `ANALYZE` of 20,000 finished jobs).
async fn plans_hold_after_analyze_of_an_idle_table(_: Server) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let q = migrated_file(&dir, "analyzed.db").await?;
    sqlx::raw_sql(
        "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 20000) \
         INSERT INTO queue_jobs (id, queue, payload, state, attempts, max_attempts, run_at, \
             created_at, updated_at, finished_at) \
         SELECT randomblob(16), 'done', 'null', 'completed', 1, 25, n, n, n, n FROM s; \
         ANALYZE;",
    )
    .execute(q.writer_pool())
    .await?;
    macro_rules! statement {
        ($name:literal) => {
            (
                $name,
                queue_core::engine::statements::load(
                    include_str!(concat!("../../queue-sqlite/queries/", $name, ".sql")),
                    &[],
                ),
            )
        };
    }
    for (name, text) in [
        statement!("job_claim"),
        statement!("job_complete"),
        statement!("job_complete_many"),
        statement!("job_complete_many_delete"),
        statement!("job_rescue"),
        statement!("job_cancel_many"),
        statement!("job_retry_many"),
        statement!("workflow_dependents"),
        statement!("job_prune"),
    ] {
        // The driver repeats the tuple after VALUES once per row.
        let text = match text.split_once("VALUES\n(") {
            Some((head, rest)) => {
                let (tuple, tail) = rest.split_once(')').context("no tuple after VALUES")?;
                let rows = vec![format!("({tuple})"); 60].join(",");
                format!("{head}VALUES\n{rows}{tail}")
            }
            None => text,
        };
        let plan = query_plan(&q, &text).await?;
        // The one scan allowed: the first queue with finished jobs (ORDER BY queue LIMIT 1).
        let scans: Vec<&String> = plan
            .iter()
            .filter(|l| l.starts_with("SCAN") && (l.contains("queue_jobs") || l.contains(" j ")))
            .collect();
        let allowed = usize::from(name == "job_prune");
        // Nor does any read the list of rows once per row (a subquery of the list correlated
        // with the table); only the prune's step from one queue to the next is correlated.
        let correlated = plan.iter().filter(|l| l.contains("CORRELATED")).count();
        ensure!(
            correlated == allowed,
            "{name} runs a correlated subquery per row:\n{}",
            plan.join("\n")
        );
        ensure!(
            scans.len() == allowed
                && scans
                    .iter()
                    .all(|l| l.contains("COVERING INDEX queue_jobs_finished_by_queue")),
            "{name} reads the table or an index end to end:\n{}",
            plan.join("\n")
        );
    }
    Ok(())
}

async fn a_write_lock_held_past_the_busy_timeout_is_unavailable(_: Server) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("busy.db");
    let q = SqliteQueue::builder(path.display().to_string())
        .busy_timeout(Duration::from_millis(100))
        .connect()
        .await?;
    q.migrate().await?;
    // Another process holds the write lock.
    let other = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display())).await?;
    let holder = other.begin_with("BEGIN IMMEDIATE").await?;
    let t = Instant::now();
    let err = q.push(NewJob::new("q", &1)?).await.err();
    ensure!(matches!(err, Some(Error::Unavailable { .. })), "{err:?}");
    ensure!(t.elapsed() >= Duration::from_millis(100));
    let err = q.pop(PopRequest::new("q")).await.err();
    ensure!(matches!(err, Some(Error::Unavailable { .. })), "{err:?}");
    // Reads go on under WAL, and writes resume once the lock is released.
    ensure!(q.stats(None).await?.is_empty());
    holder.rollback().await?;
    q.push(NewJob::new("q", &1)?).await?;
    Ok(())
}

/// A claim (and an extension) that waits for another process's write lock hands out its full
/// lease, counted from when it got the lock, not from when it started waiting.
async fn a_lease_runs_from_the_write_lock_not_from_the_wait(_: Server) -> anyhow::Result<()> {
    use sqlx::Connection;
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("stale.db").display());
    let q = SqliteQueue::builder(url.clone()).connect().await?;
    q.migrate().await?;
    q.push(NewJob::new("q", &1)?).await?;
    let lease = Duration::from_secs(1);
    let hold = |url: String| async move {
        let mut other = sqlx::SqliteConnection::connect(&url).await?;
        sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await?;
        anyhow::Ok(other)
    };
    // Another process holds the write lock for 1.5 s while the claim waits.
    let mut other = hold(url.clone()).await?;
    let popper = q.clone();
    let pop = tokio::spawn(async move { popper.pop(PopRequest::new("q").lease(lease)).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    sqlx::query("ROLLBACK").execute(&mut other).await?;
    let leased = pop.await??;
    ensure!(leased.len() == 1);
    let left = leased[0].lease.expires_at - chrono::Utc::now();
    ensure!(
        left.num_milliseconds() > 700,
        "the 1 s lease has {} ms left",
        left.num_milliseconds()
    );
    // The same for an extension.
    let mut other = hold(url.clone()).await?;
    let extender = q.clone();
    let l = leased[0].lease.clone();
    let extend = tokio::spawn(async move { extender.extend(&l, lease).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    sqlx::query("ROLLBACK").execute(&mut other).await?;
    let extended = extend.await??;
    let left = extended.expires_at - chrono::Utc::now();
    ensure!(
        left.num_milliseconds() > 700,
        "the extended lease has {} ms left",
        left.num_milliseconds()
    );
    let stored = q
        .get(extended.job_id)
        .await?
        .and_then(|j| j.lease_expires_at);
    ensure!(
        stored == Some(extended.expires_at),
        "stored {stored:?}, returned {:?}",
        extended.expires_at
    );
    Ok(())
}

/// A full disk (here: SQLite's page limit, `PRAGMA max_page_count`, lowered to the file's size on
/// the writer connection) fails writes, and once there is room again a running worker claims,
/// completes and rescues as before, without a restart.
async fn writes_resume_after_the_disk_was_full(_: Server) -> anyhow::Result<()> {
    use queue_core::worker::{JobContext, JobError, Worker};
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("full.db");
    let q = SqliteQueue::builder(path.display().to_string())
        .connect()
        .await?;
    q.migrate().await?;
    let total = 3000u64;
    let pad = "x".repeat(300);
    let mut left = total;
    while left > 0 {
        let n = left.min(500);
        let jobs = (0..n)
            .map(|_| NewJob::new("q", &serde_json::json!({ "pad": pad })))
            .collect::<Result<Vec<_>, _>>()?;
        q.push_batch(jobs).await?;
        left -= n;
    }
    // A short lease and a frequent rescue: an acknowledgement that fails while the file is full
    // is given up, and its job must come back through the rescuer within the wait below (with
    // the defaults, 30 s leases and rescues, it came back just after it).
    let handle = Worker::builder(std::sync::Arc::new(q.clone()), "q")
        .concurrency(4)
        .prefetch(10)
        .lease(Duration::from_secs(3))
        .rescue_interval(Some(Duration::from_millis(500)))
        .handler_fn(|_ctx: JobContext| async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            Ok::<(), JobError>(())
        })
        .build()?
        .start();
    let counters = handle.counters();
    let t = Instant::now();
    while counters.completed() < 300 {
        ensure!(
            t.elapsed() < Duration::from_secs(30),
            "no progress before the fault"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(q.writer_pool())
        .await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "PRAGMA max_page_count = {pages}"
    )))
    .execute(q.writer_pool())
    .await?;
    // While the file cannot grow, a batch that needs new pages is refused whole.
    let big = (0..500)
        .map(|_| NewJob::new("other", &serde_json::json!({ "pad": pad })))
        .collect::<Result<Vec<_>, _>>()?;
    let err = q.push_batch(big).await.err();
    ensure!(err.is_some(), "a batch was stored past the page limit");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    sqlx::query("PRAGMA max_page_count = 1073741823")
        .execute(q.writer_pool())
        .await?;
    let t = Instant::now();
    loop {
        let stats = q.stats(Some("q")).await?;
        let done = stats
            .first()
            .map(|s| s.count(queue_core::JobState::Completed))
            .unwrap_or(0);
        if done == total {
            break;
        }
        ensure!(
            t.elapsed() < Duration::from_secs(30),
            "{done} of {total} jobs completed 30 s after the disk had room again; counters {:?}",
            counters.snapshot()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.shutdown(Duration::from_secs(5)).await;
    // The fault was felt: claims failed while the file could not grow.
    ensure!(
        counters.pop_errors() > 0,
        "no claim failed while the file was full: {:?}",
        counters.snapshot()
    );
    // Every job whose outcome could not be written came back through the rescuer.
    let c = counters.snapshot();
    ensure!(c.rescued >= c.abandoned, "{c:?}");
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM queue_jobs WHERE queue = 'other'")
        .fetch_one(q.writer_pool())
        .await?;
    ensure!(
        stored == 0,
        "{stored} jobs of the refused batch were stored"
    );
    q.push(NewJob::new("other", &1)?).await?;
    Ok(())
}

/// SQLite may end a transaction on its own (it rolls back after `SQLITE_FULL` or `SQLITE_IOERR`,
/// as when the disk fills during `COMMIT`), after which the driver's own `ROLLBACK` fails. The
/// same happens when a caller's statement ends the transaction; that is how it is provoked here.
/// The queue's only writer connection must still take writes afterwards, in a file and in memory.
async fn writes_go_on_after_sqlite_ended_a_transaction_itself(_: Server) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ended.db");
    for target in [path.display().to_string(), ":memory:".to_string()] {
        let q = SqliteQueue::builder(target.clone()).connect().await?;
        q.migrate().await?;
        // Committed after the transaction was already gone.
        let mut tx = q.begin().await?;
        let lost = q.push_in_tx(&mut tx, NewJob::new("q", &"lost")?).await?;
        sqlx::query("ROLLBACK").execute(&mut *tx).await?;
        ensure!(
            tx.commit().await.is_err(),
            "{target}: COMMIT without a transaction succeeded"
        );
        // Dropped after the transaction was already gone.
        let mut tx = q.begin().await?;
        let dropped = q.push_in_tx(&mut tx, NewJob::new("q", &"dropped")?).await?;
        sqlx::query("ROLLBACK").execute(&mut *tx).await?;
        drop(tx);
        let kept = q
            .push(NewJob::new("q", &"kept")?)
            .await
            .with_context(|| format!("{target}: the push after the ended transactions"))?;
        let mut tx = q.begin().await?;
        let in_tx = q.push_in_tx(&mut tx, NewJob::new("q", &"in tx")?).await?;
        tx.commit().await?;
        for (id, want) in [(lost, false), (dropped, false), (kept, true), (in_tx, true)] {
            let stored = q.get(id).await?.is_some();
            ensure!(
                stored == want,
                "{target}: job {id} stored: {stored}, expected {want}"
            );
        }
        let leased = q.pop(PopRequest::new("q").limit(10)).await?;
        ensure!(leased.len() == 2, "{target}: {} jobs claimed", leased.len());
        q.ack_batch(&leased.iter().map(|j| j.lease.clone()).collect::<Vec<_>>())
            .await?;
        let stats = q.stats(Some("q")).await?;
        let done = stats[0].count(queue_core::JobState::Completed);
        ensure!(done == 2, "{target}: {done} jobs completed");
        q.close().await;
    }
    Ok(())
}

/// Counts the database driver's own reports of slow statements and slow pool checkouts, by
/// level, for the slow-statement case.
struct DriverEvents {
    warn: std::sync::atomic::AtomicU64,
    debug_slow: std::sync::atomic::AtomicU64,
}

static DRIVER_EVENTS: DriverEvents = DriverEvents {
    warn: std::sync::atomic::AtomicU64::new(0),
    debug_slow: std::sync::atomic::AtomicU64::new(0),
};

struct Counting;

impl tracing::Subscriber for Counting {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        m.target().starts_with("sqlx") && *m.level() <= tracing::Level::DEBUG
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        use std::sync::atomic::Ordering;
        struct Slow(bool);
        impl tracing::field::Visit for Slow {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "message" {
                    self.0 |= format!("{v:?}").contains("slow");
                }
            }
        }
        let mut slow = Slow(false);
        event.record(&mut slow);
        if !slow.0 {
            return;
        }
        if *event.metadata().level() <= tracing::Level::WARN {
            DRIVER_EVENTS.warn.fetch_add(1, Ordering::Relaxed);
        } else {
            DRIVER_EVENTS.debug_slow.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// A write that waits for another process's write lock past the slow-statement threshold is
/// reported by the driver at debug level, not as a warning of the service's own.
async fn a_slow_write_is_not_a_driver_warning(_: Server) -> anyhow::Result<()> {
    use std::sync::atomic::Ordering;
    ensure!(
        tracing::subscriber::set_global_default(Counting).is_ok(),
        "another case installed a global subscriber"
    );
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("slow.db");
    let q = SqliteQueue::builder(path.display().to_string())
        .connect()
        .await?;
    q.migrate().await?;
    let other = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display())).await?;
    let holder = other.begin_with("BEGIN IMMEDIATE").await?;
    let pusher = q.clone();
    let push = tokio::spawn(async move { pusher.push(NewJob::new("q", &1)?).await });
    let held = queue_core::engine::SLOW_STATEMENT + Duration::from_millis(300);
    tokio::time::sleep(held).await;
    holder.rollback().await?;
    push.await??;
    ensure!(
        DRIVER_EVENTS.debug_slow.load(Ordering::Relaxed) > 0,
        "the driver did not report the slow statement at all"
    );
    let warnings = DRIVER_EVENTS.warn.load(Ordering::Relaxed);
    ensure!(warnings == 0, "the driver logged {warnings} warnings");
    Ok(())
}

fn main() -> std::process::ExitCode {
    conformance_tests::main::<Backend>(conformance_tests::dialect_tests![
        the_error_history_keeps_the_newest_entries,
        a_missing_directory_is_unavailable_quickly,
        bad_settings_are_rejected,
        every_spelling_of_a_path_opens_the_file,
        in_memory_database_works,
        the_claim_uses_the_partial_index,
        finished_jobs_are_found_along_their_index,
        plans_hold_after_analyze_of_an_idle_table,
        a_write_lock_held_past_the_busy_timeout_is_unavailable,
        a_lease_runs_from_the_write_lock_not_from_the_wait,
        writes_resume_after_the_disk_was_full,
        writes_go_on_after_sqlite_ended_a_transaction_itself,
        a_slow_write_is_not_a_driver_warning,
        concurrent_single_pushes_are_written_together_each_with_its_own_outcome,
    ])
}
