//! The conformance suite on PostgreSQL (a fresh schema `t_<random>` per case, dropped at the end,
//! both claim strategies), and what is PostgreSQL's own: LISTEN/NOTIFY delivery and coalescing,
//! the listener's reconnection, statement chunking, configuration, the claim's query plan.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use async_trait::async_trait;
use conformance_tests::servers::random_suffix;
use conformance_tests::{Discovery, Namespace, Server, SqlBackend, TestConfig};
use queue_core::{ClaimStrategy, Error, JobId, JobState, Lease, Limits, NewJob, Queue};
use queue_postgres::{PostgresQueue, PostgresQueueBuilder};
use sqlx::postgres::PgListener;
use sqlx::{AssertSqlSafe, Postgres, Transaction};

#[path = "postgres/partitions.rs"]
mod partitions;
use partitions::{
    finished_partitions_keep_finished_jobs_apart, finished_partitions_moves_carry_every_column,
    finished_partitions_refuse_bad_input, finished_partitions_turn_on_with_jobs_in_every_state,
};

struct Backend;

fn builder(url: &str, schema: &str) -> PostgresQueueBuilder {
    PostgresQueue::builder(url)
        .schema(schema)
        .max_connections(24)
        .connect_timeout(Duration::from_secs(5))
}

/// The finished partitions the whole suite runs with, from `QUEUE_TEST_PG_PARTITIONS` (hours;
/// unset: none): every case then migrates its schema with them on.
fn partitions_under_test() -> Option<Duration> {
    let hours = std::env::var("QUEUE_TEST_PG_PARTITIONS").ok()?;
    match hours.trim().parse::<u64>() {
        Ok(h) => Some(Duration::from_secs(h * 3600)),
        Err(e) => panic!("QUEUE_TEST_PG_PARTITIONS: hours expected, got {hours:?}: {e}"),
    }
}

/// A statement naming `schema`, which is a plain identifier made by the suite (`t_` and hex).
fn in_schema(sql: &str, schema: &str) -> AssertSqlSafe<String> {
    AssertSqlSafe(sql.replace("{schema}", schema))
}

#[async_trait]
impl SqlBackend for Backend {
    type Db = Postgres;
    type Queue = PostgresQueue;
    const NAME: &'static str = "postgres";
    const CLAIMS: &'static [ClaimStrategy] =
        &[ClaimStrategy::SkipLocked, ClaimStrategy::Optimistic];

    async fn servers() -> Discovery {
        conformance_tests::servers::postgres().await
    }

    fn namespace(_server: &Server) -> anyhow::Result<Namespace> {
        Ok(Namespace::named(format!("t_{}", random_suffix())))
    }

    async fn connect(
        server: &Server,
        ns: &str,
        config: &TestConfig,
    ) -> queue_core::Result<PostgresQueue> {
        let b = builder(&server.url, ns)
            .claim_strategy(config.claim)
            .retry_policy(config.retry.clone())
            .limits(config.limits.clone())
            .keep_completed_jobs(config.keep_completed);
        let b = match partitions_under_test() {
            Some(every) => b.finished_partitions(every),
            None => b,
        };
        match conformance_tests::test_profile() {
            Some(profile) => b.profile(profile).connect().await,
            None => b.connect().await,
        }
    }

    async fn unreachable(config: &TestConfig) -> queue_core::Result<PostgresQueue> {
        PostgresQueue::builder("postgres://postgres:secret@127.0.0.1:1/test")
            .claim_strategy(config.claim)
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await
    }

    async fn seed_previous_release(
        q: &PostgresQueue,
        ns: &str,
    ) -> anyhow::Result<Option<Vec<(JobId, JobState)>>> {
        use queue_core::Backend as _;
        // Migration 5 (schedules) was the newest before job kinds.
        q.engine().migrate_until(5).await?;
        let mut tx = q.pool().begin().await?;
        let mut seeded = Vec::new();
        for (state, attempts, lease, worker, error, finished) in [
            ("pending", 0, false, None, None, false),
            ("running", 1, true, Some("old-worker"), None, false),
            ("completed", 1, false, Some("old-worker"), None, true),
            ("dead", 3, false, Some("old-worker"), Some("boom"), true),
            ("cancelled", 0, false, None, None, true),
        ] {
            let id = JobId::new();
            sqlx::query(in_schema(
                "INSERT INTO {schema}.jobs (id, queue, payload, priority, state, attempts, \
                 max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, \
                 dedup_key, version, created_at, updated_at, finished_at) \
                 VALUES ($1, 'legacy', '{\"old\": true}', 0, $2, $3, 3, now() - interval '5 s', \
                 CASE WHEN $4 THEN gen_random_uuid() END, \
                 CASE WHEN $4 THEN now() - interval '1 s' END, $5, $6, NULL, 1, \
                 now() - interval '5 s', now() - interval '4 s', \
                 CASE WHEN $7 THEN now() - interval '4 s' END)",
                ns,
            ))
            .bind(id.0)
            .bind(state)
            .bind(attempts)
            .bind(lease)
            .bind(worker)
            .bind(error)
            .bind(finished)
            .persistent(false)
            .execute(&mut *tx)
            .await?;
            seeded.push((id, state.parse()?));
        }
        tx.commit().await?;
        Ok(Some(seeded))
    }

    fn retention_floor() -> Option<Duration> {
        partitions_under_test()
    }

    async fn migrate_previous_schema(q: &PostgresQueue) -> anyhow::Result<bool> {
        use queue_core::Backend as _;
        // Migration 14 merged the two indexes of finished jobs into one. The later ones are
        // applied: this release's reads go through jobs_all (migration 16).
        q.engine().migrate_skipping(&[14]).await?;
        Ok(true)
    }

    async fn create_effects(q: &PostgresQueue, ns: &str) -> anyhow::Result<()> {
        // Statements of the suite's own are unnamed, and those outside a transaction have no
        // values (the simple protocol), so that they run behind a pooler in transaction mode.
        sqlx::raw_sql(in_schema(
            "CREATE TABLE {schema}.effects (marker TEXT NOT NULL)",
            ns,
        ))
        .execute(q.pool())
        .await?;
        Ok(())
    }

    async fn insert_effect(
        tx: &mut Transaction<'static, Postgres>,
        ns: &str,
        marker: &str,
    ) -> anyhow::Result<()> {
        sqlx::query(in_schema(
            "INSERT INTO {schema}.effects (marker) VALUES ($1)",
            ns,
        ))
        .bind(marker)
        .persistent(false)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    async fn count_effects(q: &PostgresQueue, ns: &str, marker: &str) -> anyhow::Result<u64> {
        let mut tx = q.pool().begin().await?;
        let n: i64 = sqlx::query_scalar(in_schema(
            "SELECT COUNT(*) FROM {schema}.effects WHERE marker = $1",
            ns,
        ))
        .bind(marker)
        .persistent(false)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(n as u64)
    }

    async fn begin(q: &PostgresQueue) -> queue_core::Result<Transaction<'static, Postgres>> {
        q.pool().begin().await.map_err(Error::database)
    }

    async fn push_in_tx(
        q: &PostgresQueue,
        tx: &mut Transaction<'static, Postgres>,
        job: NewJob,
    ) -> queue_core::Result<JobId> {
        q.push_in_tx(tx, job).await
    }

    async fn push_batch_in_tx(
        q: &PostgresQueue,
        tx: &mut Transaction<'static, Postgres>,
        jobs: Vec<NewJob>,
    ) -> queue_core::Result<Vec<JobId>> {
        q.push_batch_in_tx(tx, jobs).await
    }

    async fn push_workflow_in_tx(
        q: &PostgresQueue,
        tx: &mut Transaction<'static, Postgres>,
        workflow: queue_core::Workflow,
    ) -> queue_core::Result<queue_core::PushedWorkflow> {
        q.push_workflow_in_tx(tx, workflow).await
    }

    async fn complete_in_tx(
        q: &PostgresQueue,
        tx: &mut Transaction<'static, Postgres>,
        lease: &Lease,
    ) -> queue_core::Result<()> {
        q.complete_in_tx(tx, lease).await
    }

    async fn lock_job(
        tx: &mut Transaction<'static, Postgres>,
        ns: &str,
        id: JobId,
    ) -> anyhow::Result<()> {
        sqlx::query(in_schema(
            "SELECT 1 FROM {schema}.jobs WHERE id = $1 FOR UPDATE",
            ns,
        ))
        .bind(id.0)
        .persistent(false)
        .fetch_optional(&mut **tx)
        .await?;
        Ok(())
    }

    async fn break_reopen(q: &PostgresQueue, ns: &str, id: JobId) -> anyhow::Result<()> {
        sqlx::raw_sql(in_schema(
            "CREATE TABLE IF NOT EXISTS {schema}.broken_reopens (id uuid PRIMARY KEY);
             CREATE OR REPLACE FUNCTION {schema}.broken_reopen() RETURNS trigger
             LANGUAGE plpgsql AS $$
             BEGIN
                 IF EXISTS (SELECT 1 FROM {schema}.broken_reopens b WHERE b.id = OLD.id) THEN
                     RAISE EXCEPTION 'a fault of the test: this step cannot wait again';
                 END IF;
                 RETURN NEW;
             END $$;
             CREATE OR REPLACE TRIGGER broken_reopen BEFORE UPDATE ON {schema}.jobs
             FOR EACH ROW WHEN (OLD.state = 'cancelled' AND NEW.state = 'waiting')
             EXECUTE FUNCTION {schema}.broken_reopen();",
            ns,
        ))
        .execute(q.pool())
        .await?;
        let mut tx = q.pool().begin().await?;
        sqlx::query(in_schema(
            "INSERT INTO {schema}.broken_reopens (id) VALUES ($1)",
            ns,
        ))
        .bind(id.0)
        .persistent(false)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn mend(q: &PostgresQueue, ns: &str) -> anyhow::Result<()> {
        sqlx::raw_sql(in_schema(
            "DROP TRIGGER IF EXISTS broken_reopen ON {schema}.jobs;
             DROP FUNCTION IF EXISTS {schema}.broken_reopen();
             DROP TABLE IF EXISTS {schema}.broken_reopens;",
            ns,
        ))
        .execute(q.pool())
        .await?;
        Ok(())
    }

    async fn drop_namespace(q: &PostgresQueue, ns: &str) -> anyhow::Result<()> {
        sqlx::raw_sql(in_schema("DROP SCHEMA IF EXISTS {schema} CASCADE", ns))
            .execute(q.pool())
            .await?;
        q.pool().close().await;
        Ok(())
    }

    async fn close(q: &PostgresQueue) {
        q.pool().close().await;
    }
}

/// A migrated queue in a fresh schema, set up by `f`.
async fn fresh(
    server: &Server,
    f: impl FnOnce(PostgresQueueBuilder) -> PostgresQueueBuilder,
) -> anyhow::Result<PostgresQueue> {
    let q = f(builder(&server.url, &format!("t_{}", random_suffix())))
        .connect()
        .await?;
    q.migrate().await?;
    Ok(q)
}

async fn drop_schema(q: &PostgresQueue) -> anyhow::Result<()> {
    Backend::drop_namespace(q, q.schema()).await
}

async fn count_jobs(q: &PostgresQueue) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar(in_schema("SELECT count(*) FROM {schema}.jobs", q.schema()))
            .fetch_one(q.pool())
            .await?,
    )
}

fn job(queue: &str, n: i64) -> NewJob {
    NewJob::new(queue, &serde_json::json!({ "n": n })).expect("a JSON value serializes")
}

/// Collects the notifications that arrive on the listener within `window`.
async fn notifications(listener: &mut PgListener, window: Duration) -> Vec<String> {
    let mut got = Vec::new();
    let deadline = Instant::now() + window;
    while let Ok(Ok(n)) = tokio::time::timeout_at(deadline.into(), listener.recv()).await {
        got.push(n.payload().to_owned());
    }
    got
}

/// Collects notifications until `n` have arrived (within 10 s, however loaded the machine),
/// then any more that arrive within 200 ms.
async fn at_least_notifications(listener: &mut PgListener, n: usize) -> Vec<String> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < n {
        match tokio::time::timeout_at(deadline.into(), listener.recv()).await {
            Ok(Ok(m)) => got.push(m.payload().to_owned()),
            _ => return got,
        }
    }
    got.extend(notifications(listener, Duration::from_millis(200)).await);
    got
}

/// A batch push and a push inside a transaction send one NOTIFY per queue, at commit (none on
/// rollback); a queue built with `notify(false)` sends none.
async fn one_notification_per_queue_per_transaction(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let mut listener = PgListener::connect(&server.url).await?;
    listener.listen(q.channel()).await?;

    let batch = (0..50)
        .map(|i| job(if i % 2 == 0 { "x" } else { "y" }, i))
        .collect();
    q.push_batch(batch).await?;
    let mut got = at_least_notifications(&mut listener, 2).await;
    got.sort();
    ensure!(got == ["x", "y"], "{got:?}");

    let mut tx = q.pool().begin().await?;
    q.push_in_tx(&mut tx, job("x", 1)).await?;
    q.push_in_tx(&mut tx, job("x", 2)).await?;
    ensure!(notifications(&mut listener, Duration::from_millis(200))
        .await
        .is_empty());
    tx.commit().await?;
    let got = at_least_notifications(&mut listener, 1).await;
    ensure!(got == ["x"], "{got:?}");
    let mut tx = q.pool().begin().await?;
    q.push_in_tx(&mut tx, job("x", 3)).await?;
    tx.rollback().await?;
    ensure!(notifications(&mut listener, Duration::from_millis(200))
        .await
        .is_empty());

    let quiet = builder(&server.url, q.schema())
        .notify(false)
        .connect()
        .await?;
    quiet.push(job("x", 4)).await?;
    quiet.push_batch(vec![job("x", 5)]).await?;
    ensure!(notifications(&mut listener, Duration::from_millis(200))
        .await
        .is_empty());
    ensure!(count_jobs(&q).await? == 54);
    drop_schema(&q).await
}

/// Single pushes within the coalescing window share one trailing NOTIFY; none is lost.
async fn single_push_notifications_are_coalesced_but_never_lost(
    server: Server,
) -> anyhow::Result<()> {
    // The longest window the builder allows: a notification held for it is told apart from
    // one sent at once on a loaded machine.
    const WINDOW: Duration = Duration::from_secs(1);
    let q = fresh(&server, |b| b).await?;
    let producer = builder(&server.url, q.schema())
        .notify_window(WINDOW)
        .connect()
        .await?;
    let mut listener = PgListener::connect(&server.url).await?;
    listener.listen(q.channel()).await?;
    let t = Instant::now();
    for i in 0..20 {
        producer.push(job("burst", i)).await?;
    }
    let pushed_in = t.elapsed();
    let got = notifications(&mut listener, WINDOW * 5 / 2).await;
    if pushed_in < WINDOW {
        // The first push notified at once; the other 19 share one trailing notification.
        ensure!(
            got == ["burst", "burst"],
            "pushed in {pushed_in:?}: {got:?}"
        );
    } else {
        ensure!(got.len() >= 2 && got.len() < 20, "{got:?}");
    }
    ensure!(count_jobs(&q).await? == 20);
    // A quiet queue notifies at once again: well before a held notification would come.
    let t = Instant::now();
    producer.push(job("burst", 20)).await?;
    let first = tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .context("no notification within 10 s of the push")??;
    let took = t.elapsed();
    ensure!(
        took < WINDOW * 7 / 10,
        "the quiet queue's notification came {took:?} after the push (the window is {WINDOW:?})"
    );
    let mut got = vec![first.payload().to_owned()];
    got.extend(notifications(&mut listener, Duration::from_millis(200)).await);
    ensure!(got == ["burst"], "{got:?}");
    drop_schema(&q).await
}

/// The backend pid of `q`'s LISTEN connection (of `user`'s sessions, when given), as `observer`
/// sees it in `pg_stat_activity`; waits up to 10 s for it to appear.
async fn listener_pid(
    observer: &PostgresQueue,
    q: &PostgresQueue,
    user: Option<&str>,
) -> anyhow::Result<i32> {
    let listen_sql = format!("LISTEN \"{}\"", q.channel());
    let t = Instant::now();
    loop {
        let pid: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity \
             WHERE starts_with(query, $1) AND ($2::text IS NULL OR usename = $2)",
        )
        .bind(&listen_sql)
        .bind(user)
        .fetch_optional(observer.pool())
        .await?;
        if let Some(pid) = pid {
            return Ok(pid);
        }
        ensure!(t.elapsed() < Duration::from_secs(10), "no listener backend");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The LISTEN task notices its backend was terminated, listens again on a new one, and pushes
/// from elsewhere wake through it.
async fn the_listener_reconnects_after_its_backend_is_killed(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let producer = builder(&server.url, q.schema()).connect().await?;
    q.wait_for_work("rc", Duration::from_millis(10)).await;
    let pid_of_listener = || listener_pid(&producer, &q, None);
    let old = pid_of_listener().await?;
    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(old)
        .fetch_one(producer.pool())
        .await?;
    ensure!(killed);
    let t = Instant::now();
    while pid_of_listener().await? == old {
        ensure!(
            t.elapsed() < Duration::from_secs(10),
            "the listener never came back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    while !q.is_listening() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Drain the catch-up wake-up; then a push from elsewhere must arrive through the new LISTEN.
    q.wait_for_work("rc", Duration::from_millis(100)).await;
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            q.wait_for_work("rc", Duration::from_secs(10)).await;
            t.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    producer.push(job("rc", 1)).await?;
    let waited = waiter.await?;
    ensure!(
        waited < Duration::from_secs(5),
        "woken through the new connection: {waited:?}"
    );
    drop_schema(&q).await
}

/// A pool connection killed by the server surfaces once as Unavailable, then is replaced.
async fn a_killed_connection_is_unavailable_once_then_replaced(
    server: Server,
) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b.max_connections(1)).await?;
    let id = q.push(job("k", 1)).await?;
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(q.pool())
        .await?;
    let admin = builder(&server.url, q.schema()).connect().await?;
    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(admin.pool())
        .await?;
    ensure!(killed);
    tokio::time::sleep(Duration::from_millis(100)).await;
    if let Err(e) = q.get(id).await {
        ensure!(
            e.is_transient(),
            "a dropped connection is Unavailable: {e:?}"
        );
    }
    let job = q.get(id).await?;
    ensure!(job.is_some(), "the pool replaced the dead connection");
    drop_schema(&q).await
}

/// Batches beyond one statement's chunk (5,000 rows) are split inside one transaction: all
/// stored, or none when a row of the last chunk is refused.
async fn batches_span_chunks_atomically(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| {
        b.limits(Limits {
            max_batch: 20_000,
            ..Limits::default()
        })
    })
    .await?;
    let jobs: Vec<NewJob> = (0..12_000).map(|i| job("bulk", i)).collect();
    let ids: Vec<JobId> = jobs.iter().map(NewJob::id).collect();
    ensure!(q.push_batch(jobs).await? == ids);
    ensure!(count_jobs(&q).await? == 12_000);
    // An id clash in the last chunk rolls back the first ones too.
    let mut jobs: Vec<NewJob> = (0..11_000).map(|i| job("bulk2", i)).collect();
    jobs.push(job("bulk2", 0).with_id(ids[0]));
    let r = q.push_batch(jobs).await;
    ensure!(matches!(r, Err(Error::Database { .. })), "{r:?}");
    ensure!(count_jobs(&q).await? == 12_000);
    drop_schema(&q).await
}

/// Large batches due at once are written with one binary COPY: stored exactly (payload text,
/// keys, priorities), one NOTIFY per queue, a dedup clash named and nothing stored; a batch with
/// a delayed job takes the INSERT path and is stored the same.
async fn large_batches_are_copied_atomically(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let mut listener = PgListener::connect(&server.url).await?;
    listener.listen(q.channel()).await?;
    let text = r#"{"z": 1, "a": "tab\there", "nul": "\u0000"}"#;
    let jobs: Vec<NewJob> = (0..200)
        .map(|i| {
            let j = NewJob::from_json(if i % 2 == 0 { "cx" } else { "cy" }, text)
                .expect("valid JSON")
                .priority(i - 100)
                .max_attempts(7);
            if i % 10 == 0 {
                j.dedup_key(format!("key {i}"))
            } else {
                j
            }
        })
        .collect();
    let ids = q.push_batch(jobs).await?;
    let mut got = at_least_notifications(&mut listener, 2).await;
    got.sort();
    ensure!(got == ["cx", "cy"], "{got:?}");
    let stored = q
        .get(ids[10])
        .await?
        .ok_or_else(|| anyhow::anyhow!("job 10 missing"))?;
    ensure!(stored.payload.get() == text, "{}", stored.payload.get());
    ensure!(stored.priority == -90 && stored.max_attempts == 7 && stored.attempts == 0);
    ensure!(stored.dedup_key.as_deref() == Some("key 10") && stored.queue == "cx");
    ensure!(stored.run_at <= q.now().await?, "a copied job is due now");
    ensure!(count_jobs(&q).await? == 200);
    // A clash on the last row: Duplicate naming it, nothing of the batch stored.
    let mut clash: Vec<NewJob> = (0..100).map(|i| job("cx", i)).collect();
    clash.push(job("cx", 100).dedup_key("key 40"));
    match q.push_batch(clash).await {
        Err(Error::Duplicate { queue, dedup_key }) => {
            ensure!(
                queue == "cx" && dedup_key == "key 40",
                "{queue} {dedup_key}"
            )
        }
        other => anyhow::bail!("expected Duplicate, got {other:?}"),
    }
    ensure!(count_jobs(&q).await? == 200);
    // One delayed job: the INSERT path.
    let mut mixed: Vec<NewJob> = (0..100).map(|i| job("cz", i)).collect();
    mixed.push(job("cz", 100).delay(Duration::from_secs(60)));
    q.push_batch(mixed).await?;
    ensure!(count_jobs(&q).await? == 301);
    let s = &q.stats(Some("cz")).await?[0];
    ensure!(s.available == 100 && s.scheduled == 1, "{s:?}");
    drop_schema(&q).await
}

/// An extension that waits for another transaction's lock on the job's row gets its full
/// lease, counted from when it updated the row, not from when the statement started.
async fn an_extension_that_waits_for_a_row_lock_gets_its_full_lease(
    server: Server,
) -> anyhow::Result<()> {
    // Both ways of extending: clock_timestamp() after the lock in one statement, and (without
    // volatile functions in an UPDATE, as on Citus) a lock, then a statement that starts after it.
    for profile in [
        queue_core::Profile::Detect,
        queue_core::Profile::Distributed,
    ] {
        extension_after_a_row_lock(&server, profile)
            .await
            .with_context(|| format!("profile {profile:?}"))?;
    }
    Ok(())
}

async fn extension_after_a_row_lock(
    server: &Server,
    profile: queue_core::Profile,
) -> anyhow::Result<()> {
    let q = fresh(server, |b| b.profile(profile)).await?;
    q.push(job("ext", 1)).await?;
    let leased = q
        .pop(queue_core::PopRequest::new("ext").lease(Duration::from_secs(1)))
        .await?;
    ensure!(leased.len() == 1);
    let lease = leased[0].lease.clone();
    // Another transaction holds the row for 4 s.
    let mut holder = q.pool().begin().await?;
    sqlx::query(in_schema(
        "SELECT 1 FROM {schema}.jobs WHERE id = $1 FOR UPDATE",
        q.schema(),
    ))
    .bind(lease.job_id.0)
    .execute(&mut *holder)
    .await?;
    let extender = q.clone();
    let l = lease.clone();
    let extend = tokio::spawn(async move { extender.extend(&l, Duration::from_secs(10)).await });
    tokio::time::sleep(Duration::from_millis(4_000)).await;
    holder.rollback().await?;
    let extended = extend.await??;
    let now = q.now().await?;
    let left = extended.expires_at - now;
    ensure!(
        // A lease measured from before the lock wait would have about 6 s.
        left.num_milliseconds() > 8_500,
        "the extended 10 s lease has {} ms left",
        left.num_milliseconds()
    );
    drop_schema(&q).await
}

/// Settings are checked before connecting; a closed port is Unavailable with its address and
/// without the password.
async fn bad_configuration_and_unreachable_servers(server: Server) -> anyhow::Result<()> {
    let field = |r: queue_core::Result<PostgresQueue>| match r {
        Err(Error::InvalidInput { field, .. }) => Ok(field),
        other => Err(anyhow::anyhow!("expected InvalidInput, got {other:?}")),
    };
    ensure!(
        field(
            PostgresQueue::builder(&server.url)
                .schema("bad-schema;")
                .connect()
                .await
        )? == "schema"
    );
    ensure!(
        field(
            PostgresQueue::builder("mysql://x@localhost/db")
                .connect()
                .await
        )? == "url"
    );
    ensure!(
        field(
            PostgresQueue::builder(&server.url)
                .claim_strategy(ClaimStrategy::WriteLock)
                .connect()
                .await
        )? == "claim_strategy"
    );
    // A LISTEN cannot live behind a pooler in transaction mode: neither a listen_url through
    // one nor NOTIFY wake-ups through the queue's own pooled URL.
    ensure!(
        field(
            PostgresQueue::builder("postgres://u@127.0.0.1:1/db?pooler=transaction")
                .listen_url("postgres://u@127.0.0.1:1/db?pooler=transaction")
                .connect()
                .await
        )? == "listen_url"
    );
    ensure!(
        field(
            PostgresQueue::builder("postgres://u@127.0.0.1:1/db?pooler=transaction&wakeups=notify")
                .connect()
                .await
        )? == "url"
    );
    conformance_tests::expect_refused_connection(|| {
        PostgresQueue::builder("postgres://user:hunter2@127.0.0.1:1/db")
            .connect_timeout(Duration::from_millis(500))
            .connect()
    })
    .await?;
    let shown = format!(
        "{:?}",
        PostgresQueue::builder("postgres://user:hunter2@h/db")
    );
    ensure!(!shown.contains("hunter2"), "{shown}");
    Ok(())
}

/// The claim reads the partial claim index in order: no sort, no scan of finished rows.
/// The error history keeps exactly the newest entries at any bound, through every statement
/// that appends one (see `conformance_tests::statements`).
async fn the_error_history_keeps_the_newest_entries(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    conformance_tests::statements::error_history_keeps_the_newest(&q).await?;
    drop_schema(&q).await
}

async fn the_claim_reads_the_claim_index(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let plan: Vec<String> = sqlx::query_scalar(in_schema(
        "EXPLAIN SELECT id FROM {schema}.jobs WHERE queue = 'q' AND state = 'pending' \
         AND run_at <= now() ORDER BY priority DESC, run_at, id LIMIT 10 FOR UPDATE SKIP LOCKED",
        q.schema(),
    ))
    .fetch_all(q.pool())
    .await?;
    let plan = plan.join("\n");
    ensure!(plan.contains("jobs_claim_idx"), "{plan}");
    ensure!(!plan.contains("Sort"), "{plan}");
    drop_schema(&q).await
}

/// A prune that waits for a finished job's row lock rechecks the job's state: a dead job that
/// an operator's retry moves back to pending meanwhile is not deleted after the retry
/// committed. (The retry is played by hand here so that it can hold its lock.)
async fn a_prune_spares_a_job_retried_while_it_waited(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let id = q.push(job("prune-race", 1)).await?;
    let leased = q.pop(queue_core::PopRequest::new("prune-race")).await?;
    ensure!(leased.len() == 1);
    q.fail(&leased[0].lease, queue_core::Failure::permanent("gives up"))
        .await?;
    sqlx::query(in_schema(
        "UPDATE {schema}.jobs SET finished_at = now() - interval '2 hours' WHERE id = $1",
        q.schema(),
    ))
    .bind(id.0)
    .execute(q.pool())
    .await?;
    let mut retry = q.pool().begin().await?;
    sqlx::query(in_schema(
        "UPDATE {schema}.jobs SET state = 'pending', attempts = 0, run_at = now(), \
         finished_at = NULL WHERE id = $1 AND state = 'dead'",
        q.schema(),
    ))
    .bind(id.0)
    .execute(&mut *retry)
    .await?;
    let pruner = {
        let q = q.clone();
        tokio::spawn(async move {
            q.prune(queue_core::PruneRequest::older_than(Duration::from_secs(
                3600,
            )))
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    ensure!(
        !pruner.is_finished(),
        "the prune did not wait for the row lock"
    );
    retry.commit().await?;
    let pruned = pruner.await??;
    ensure!(pruned == 0, "pruned {pruned}");
    let job = q.get(id).await?.context("the retried job was deleted")?;
    ensure!(job.state == queue_core::JobState::Pending, "{job:?}");
    drop_schema(&q).await
}

/// `url` with `127.0.0.1:1` (where nothing listens) put first in its host list, and `params`
/// appended to its query.
fn with_dead_host_first(url: &str, params: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
    let at = rest.find('/').unwrap_or(rest.len());
    let userinfo_end = rest[..at].rfind('@').map_or(0, |i| i + 1);
    let mut out = format!(
        "{scheme}://{}127.0.0.1:1,{}",
        &rest[..userinfo_end],
        &rest[userinfo_end..]
    );
    out.push(if out.contains('?') { '&' } else { '?' });
    out.push_str(params);
    out
}

/// `url` with its user and password replaced.
fn as_user(url: &str, user: &str, password: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
    let at = rest.find('/').unwrap_or(rest.len());
    let host = rest[..at].rfind('@').map_or(0, |i| i + 1);
    format!("{scheme}://{user}:{password}@{}", &rest[host..])
}

/// A host list is tried in order: a first host where nothing listens is skipped, and with
/// `target_session_attrs=read-write` the queue lands on the read-write server and works.
async fn a_host_list_skips_servers_that_do_not_answer(server: Server) -> anyhow::Result<()> {
    let url = with_dead_host_first(&server.url, "target_session_attrs=read-write");
    let q = builder(&url, &format!("t_{}", random_suffix()))
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await?;
    q.migrate().await?;
    let id = q.push(job("hl", 1)).await?;
    let leased = q.pop(queue_core::PopRequest::new("hl")).await?;
    ensure!(leased.len() == 1 && leased[0].job.id == id);
    q.ack(&leased[0].lease).await?;
    let state: String = sqlx::query_scalar(in_schema(
        "SELECT state FROM {schema}.jobs WHERE id = $1",
        q.schema(),
    ))
    .bind(id.0)
    .fetch_one(q.pool())
    .await?;
    ensure!(state == "completed", "{state}");
    // Values of target_session_attrs that would pick a read-only server are refused by name.
    for (value, says) in [("standby", "cannot take writes"), ("rw", "\"rw\"")] {
        match PostgresQueue::builder(with_dead_host_first(
            &server.url,
            &format!("target_session_attrs={value}"),
        ))
        .connect()
        .await
        {
            Err(Error::InvalidInput { field, rule }) => ensure!(
                field == "url" && rule.contains("target_session_attrs") && rule.contains(says),
                "{field}: {rule}"
            ),
            other => anyhow::bail!("target_session_attrs={value}: {other:?}"),
        }
    }
    drop_schema(&q).await
}

/// A role of its own whose sessions can be made read-only (`ALTER ROLE ... SET
/// default_transaction_read_only`), the way a primary demoted in place answers: the name and
/// password are made here and quoted by the server (`format` with `%I` and `%L`).
struct Role {
    name: String,
    password: String,
}

impl Role {
    async fn create(admin: &PostgresQueue) -> anyhow::Result<Role> {
        let role = Role {
            name: format!("queue_ro_{}", random_suffix()),
            password: random_suffix(),
        };
        for statement in [
            "SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', $1::text, $2::text)",
            "SELECT format('GRANT CREATE ON DATABASE %I TO %I', current_database(), $1::text)",
        ] {
            let ddl: String = sqlx::query_scalar(statement)
                .bind(&role.name)
                .bind(&role.password)
                .fetch_one(admin.pool())
                .await?;
            sqlx::query(AssertSqlSafe(ddl))
                .execute(admin.pool())
                .await?;
        }
        Ok(role)
    }

    /// Makes the role's new sessions read-only (`on`) or read-write again.
    async fn read_only(&self, admin: &PostgresQueue, on: bool) -> anyhow::Result<()> {
        let statement = if on {
            "SELECT format('ALTER ROLE %I SET default_transaction_read_only = on', $1::text)"
        } else {
            "SELECT format('ALTER ROLE %I RESET default_transaction_read_only', $1::text)"
        };
        let ddl: String = sqlx::query_scalar(statement)
            .bind(&self.name)
            .fetch_one(admin.pool())
            .await?;
        sqlx::query(AssertSqlSafe(ddl))
            .execute(admin.pool())
            .await?;
        Ok(())
    }

    async fn drop(&self, admin: &PostgresQueue) -> anyhow::Result<()> {
        sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1")
            .bind(&self.name)
            .execute(admin.pool())
            .await?;
        // DROP OWNED drops what the role made (its schema, even when the test failed midway).
        for statement in [
            "SELECT format('DROP OWNED BY %I CASCADE', $1::text)",
            "SELECT format('REVOKE CREATE ON DATABASE %I FROM %I', current_database(), $1::text)",
            "SELECT format('DROP ROLE %I', $1::text)",
        ] {
            let ddl: String = sqlx::query_scalar(statement)
                .bind(&self.name)
                .fetch_one(admin.pool())
                .await?;
            sqlx::query(AssertSqlSafe(ddl))
                .execute(admin.pool())
                .await?;
        }
        Ok(())
    }
}

/// What a job looks like in the table: (state, attempts).
async fn row_of(admin: &PostgresQueue, schema: &str, id: JobId) -> anyhow::Result<(String, i32)> {
    Ok(sqlx::query_as(in_schema(
        "SELECT state, attempts FROM {schema}.jobs WHERE id = $1",
        schema,
    ))
    .bind(id.0)
    .fetch_one(admin.pool())
    .await?)
}

/// A server that answers every write with SQLSTATE 25006 (read-only transaction: a standby, or
/// a primary demoted in place) is unavailable, not a job error: pushes, acks and failures
/// return `Unavailable`, no job changes, and once writes are possible again the queue value
/// goes on without a restart (no pooled connection keeps answering 25006). The LISTEN
/// connection is left for a fresh one as well.
async fn a_read_only_server_is_unavailable_until_it_takes_writes_again(
    server: Server,
) -> anyhow::Result<()> {
    let admin = fresh(&server, |b| b).await?;
    let role = Role::create(&admin).await?;
    let outcome = async {
        // A schema of the role's own (the admin's schema is not the role's to write).
        let schema = format!("t_{}", random_suffix());
        let q = builder(&as_user(&server.url, &role.name, &role.password), &schema)
            .max_connections(4)
            .connect()
            .await?;
        q.migrate().await?;
        q.push(job("ro", 1)).await?;
        q.push(job("ro", 2)).await?;
        let leased = q.pop(queue_core::PopRequest::new("ro").limit(2)).await?;
        ensure!(leased.len() == 2);
        q.wait_for_work("ro", Duration::from_millis(10)).await;
        let listener_pid = || listener_pid(&admin, &q, Some(&role.name));
        let old_listener = listener_pid().await?;

        // Demote: new sessions are read-only, and the queries' sessions are cut (the LISTEN
        // session stays: it must leave by itself).
        role.read_only(&admin, true).await?;
        sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE usename = $1 AND pid <> $2",
        )
        .bind(&role.name)
        .bind(old_listener)
        .execute(admin.pool())
        .await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        for n in 0..3 {
            match q.push(job("ro", 10 + n)).await {
                Err(e) if e.is_transient() => {}
                other => anyhow::bail!("a push to a read-only server: {other:?}"),
            }
        }
        let failure = queue_core::Failure::retryable("handler error");
        match q.ack(&leased[0].lease).await {
            Err(e) if e.is_transient() => {}
            other => anyhow::bail!("an ack on a read-only server: {other:?}"),
        }
        match q.fail(&leased[1].lease, failure.clone()).await {
            Err(e) if e.is_transient() => {}
            other => anyhow::bail!("a failure on a read-only server: {other:?}"),
        }
        let pushed: i64 =
            sqlx::query_scalar(in_schema("SELECT count(*) FROM {schema}.jobs", &schema))
                .fetch_one(admin.pool())
                .await?;
        ensure!(pushed == 2, "nothing was pushed while read-only: {pushed}");
        for l in &leased {
            let (state, attempts) = row_of(&admin, &schema, l.job.id).await?;
            ensure!(state == "running" && attempts == 1, "{state} {attempts}");
        }
        // The LISTEN connection left its read-only-era session for a new one.
        let t = Instant::now();
        while listener_pid().await? == old_listener {
            ensure!(
                t.elapsed() < Duration::from_secs(10),
                "the listener stayed on its old session"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        // Writes are possible again. A connection opened while the server was read-only (the
        // listener's probe takes one from the pool, to send its NOTIFY) fails its first write
        // once and is retired with every other: one call may still be Unavailable, then every
        // call succeeds. Without the retirement, the pool's four read-only connections would
        // go on failing.
        role.read_only(&admin, false).await?;
        let mut failed = 0;
        let mut once = |r: queue_core::Result<()>| -> anyhow::Result<bool> {
            match r {
                Ok(()) => Ok(true),
                Err(e) if e.is_transient() && failed == 0 => {
                    failed += 1;
                    Ok(false)
                }
                Err(e) => Err(anyhow::anyhow!(
                    "after recovery ({failed} failed before): {e:?}"
                )),
            }
        };
        while !once(q.ack(&leased[0].lease).await)? {}
        while !once(q.fail(&leased[1].lease, failure.clone()).await.map(|_| ()))? {}
        let mut third = None;
        while third.is_none() {
            let r = q.push(job("ro", 3)).await;
            let id = r.as_ref().ok().copied();
            if once(r.map(|_| ()))? {
                third = id;
            }
        }
        let third = third.expect("pushed");
        ensure!(row_of(&admin, &schema, leased[0].job.id).await?.0 == "completed");
        ensure!(row_of(&admin, &schema, leased[1].job.id).await?.0 == "pending");
        ensure!(row_of(&admin, &schema, third).await?.0 == "pending");
        q.pool().close().await;
        Ok(())
    }
    .await;
    let cleaned = role.drop(&admin).await;
    let dropped = drop_schema(&admin).await;
    outcome.and(cleaned).and(dropped)
}

/// Poll-only mode (`.poll_only()` or `wakeups=poll` in the URL): pushes send no NOTIFY,
/// waiting opens no LISTEN connection, and a push through the same queue value still wakes
/// its own waiter at once.
async fn poll_only_mode_neither_notifies_nor_listens(server: Server) -> anyhow::Result<()> {
    let by_builder = fresh(&server, |b| b.poll_only()).await?;
    let mut url = server.url.clone();
    url.push(if url.contains('?') { '&' } else { '?' });
    url.push_str("wakeups=poll");
    let by_url = builder(&url, by_builder.schema()).connect().await?;
    let mut listener = PgListener::connect(&server.url).await?;
    listener.listen(by_builder.channel()).await?;
    for q in [&by_builder, &by_url] {
        ensure!(
            q.capabilities().wakeups == queue_core::Wakeups::InProcess,
            "{:?}",
            q.capabilities().wakeups
        );
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                q.wait_for_work("po", Duration::from_secs(10)).await;
                t.elapsed()
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        q.push(job("po", 1)).await?;
        q.push_batch(vec![job("po", 2), job("po", 3)]).await?;
        let waited = waiter.await?;
        ensure!(
            waited < Duration::from_secs(5),
            "woken in process: {waited:?}"
        );
        ensure!(!q.is_listening(), "no LISTEN connection");
    }
    let got = notifications(&mut listener, Duration::from_millis(300)).await;
    ensure!(got.is_empty(), "no NOTIFY in poll-only mode: {got:?}");
    ensure!(count_jobs(&by_builder).await? == 6);
    let listens: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE starts_with(query, $1)")
            .bind(format!("LISTEN \"{}\"", by_builder.channel()))
            .fetch_one(by_builder.pool())
            .await?;
    ensure!(listens == 1, "only the test's own LISTEN: {listens}");
    drop_schema(&by_builder).await
}

/// A tenth of the claims fail with SQLSTATE 40001 (serialization failure, what CockroachDB and
/// YugabyteDB raise under contention), injected by a trigger on the claim's UPDATE: eight
/// concurrent claimers drain 400 jobs with the native and with the distributed profile, and
/// every job is claimed exactly once (attempts 1: a failed claim left no trace) and completed.
/// Inside the caller's transaction the failure is `Error::Conflict`, not retried.
async fn claims_that_fail_with_40001_are_retried_and_lose_nothing(
    server: Server,
) -> anyhow::Result<()> {
    for profile in [
        queue_core::Profile::Detect,
        queue_core::Profile::Distributed,
    ] {
        let q = fresh(&server, |b| b.profile(profile)).await?;
        let s = q.schema().to_owned();
        for ddl in [
            "CREATE SEQUENCE {schema}.injected",
            "CREATE FUNCTION {schema}.inject() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN \
               IF random() < 0.1 THEN \
                 PERFORM nextval('{schema}.injected'); \
                 RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'injected serialization failure'; \
               END IF; \
               RETURN NEW; \
             END $$",
            "CREATE TRIGGER inject BEFORE UPDATE ON {schema}.jobs FOR EACH ROW \
             WHEN (OLD.state = 'pending' AND NEW.state = 'running') \
             EXECUTE FUNCTION {schema}.inject()",
        ] {
            sqlx::raw_sql(in_schema(ddl, &s)).execute(q.pool()).await?;
        }
        let ids: Vec<JobId> = q
            .push_batch((0..400).map(|n| job("f40", n)).collect())
            .await?;
        let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
        let mut claimers = Vec::new();
        for _ in 0..8 {
            let (q, seen) = (q.clone(), seen.clone());
            claimers.push(tokio::spawn(async move {
                let mut idle = 0;
                while idle < 20 {
                    let got = q.pop(queue_core::PopRequest::new("f40")).await?;
                    if got.is_empty() {
                        idle += 1;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    }
                    idle = 0;
                    for l in got {
                        ensure!(
                            seen.lock().unwrap().insert(l.job.id),
                            "job {} claimed twice",
                            l.job.id
                        );
                        q.ack(&l.lease).await?;
                    }
                }
                Ok::<_, anyhow::Error>(())
            }));
        }
        for c in claimers {
            c.await??;
        }
        let injected: i64 = sqlx::query_scalar(in_schema(
            "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {schema}.injected",
            &s,
        ))
        .fetch_one(q.pool())
        .await?;
        let (done, first_try): (i64, i64) = sqlx::query_as(in_schema(
            "SELECT count(*) FILTER (WHERE state = 'completed'), \
                    count(*) FILTER (WHERE attempts = 1) FROM {schema}.jobs",
            &s,
        ))
        .fetch_one(q.pool())
        .await?;
        ensure!(
            seen.lock().unwrap().len() == ids.len(),
            "{profile:?}: claimed {} of {}",
            seen.lock().unwrap().len(),
            ids.len()
        );
        ensure!(
            done == 400 && first_try == 400,
            "{profile:?}: {done} completed, {first_try} on their first attempt"
        );
        ensure!(
            injected >= 10,
            "{profile:?}: only {injected} failures injected"
        );

        // Inside the caller's transaction nothing is retried: the typed error says to roll
        // back and run it again, and nothing was stored.
        for ddl in [
            "CREATE FUNCTION {schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'injected'; END $$",
            "CREATE TRIGGER refuse BEFORE INSERT ON {schema}.jobs FOR EACH ROW \
             EXECUTE FUNCTION {schema}.refuse()",
        ] {
            sqlx::raw_sql(in_schema(ddl, &s)).execute(q.pool()).await?;
        }
        let mut tx = q.pool().begin().await?;
        let r = q.push_in_tx(&mut tx, job("f40", 1)).await;
        ensure!(
            matches!(&r, Err(e @ Error::Conflict { .. }) if e.is_retryable()),
            "{r:?}"
        );
        tx.rollback().await?;
        let r = q.push(job("f40", 2)).await;
        ensure!(
            matches!(r, Err(Error::Conflict { .. })),
            "after retries: {r:?}"
        );
        ensure!(count_jobs(&q).await? == 400);
        drop_schema(&q).await?;
    }
    Ok(())
}

/// A LISTEN that cannot hear the queue's NOTIFYs (behind a pooler in transaction mode; here a
/// `listen_url` naming another database, since notifications stay within one database) is
/// found out by its probe and reported: `is_listening` turns false (and a warning is logged),
/// so waiting is known to fall back to polling. A LISTEN that hears them stays listening.
async fn a_listen_connection_that_hears_nothing_is_reported(server: Server) -> anyhow::Result<()> {
    let (base, query) = match server.url.split_once('?') {
        Some((b, q)) => (b.to_owned(), format!("?{q}")),
        None => (server.url.clone(), String::new()),
    };
    let (root, database) = base.rsplit_once('/').expect("a URL with a database");
    let other = if database == "postgres" {
        "template1"
    } else {
        "postgres"
    };
    let deaf = fresh(&server, |b| b.listen_url(format!("{root}/{other}{query}"))).await?;
    let hears = builder(&server.url, deaf.schema()).connect().await?;
    for q in [&deaf, &hears] {
        q.wait_for_work("lp", Duration::from_millis(10)).await;
    }
    let t = Instant::now();
    while deaf.is_listening() || t.elapsed() < Duration::from_secs(6) {
        ensure!(
            t.elapsed() < Duration::from_secs(15),
            "a LISTEN on another database was never reported"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ensure!(
        hears.is_listening(),
        "the LISTEN that hears its probe stays listening"
    );
    drop_schema(&deaf).await
}

/// Behind a pooler in transaction mode: a LISTEN sent through the pooler (a `listen_url` with
/// the pooler's address) hears nothing, and the queue says so (`is_listening()` false, one
/// warning) while polling goes on; asking for NOTIFY wake-ups without a direct LISTEN URL is
/// refused before anything connects.
async fn a_listen_through_a_transaction_pooler_is_reported(server: Server) -> anyhow::Result<()> {
    let through_pooler = server.url.replace("pooler=transaction", "pooler=none");
    let q = fresh(&server, |b| b.listen_url(through_pooler)).await?;
    q.wait_for_work("lp", Duration::from_millis(10)).await;
    let t = Instant::now();
    while q.is_listening() {
        ensure!(
            t.elapsed() < Duration::from_secs(15),
            "a LISTEN through the pooler was never reported"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Work still flows, by polling.
    let id = q.push(job("lp", 1)).await?;
    let got = q
        .pop(queue_core::PopRequest::new("lp").lease(Duration::from_secs(30)))
        .await?;
    ensure!(got.len() == 1 && got[0].job.id == id, "popped {got:?}");
    q.ack(&got[0].lease).await?;
    drop_schema(&q).await?;

    let refused = builder(&format!("{}&wakeups=notify", server.url), "queue")
        .connect()
        .await
        .err()
        .context("wakeups=notify through a transaction pooler was accepted")?;
    ensure!(
        matches!(&refused, Error::InvalidInput { field, .. } if field == "url"),
        "{refused:?}"
    );
    Ok(())
}

/// The claim strategies the forced profile (`QUEUE_TEST_PROFILE`) has: all of them, or only the
/// optimistic claim where it lacks SKIP LOCKED or per-row volatile functions.
fn claims() -> &'static [ClaimStrategy] {
    match conformance_tests::test_profile() {
        Some(p) => {
            let flags = p.settle(queue_core::ServerKind::Postgres);
            if flags.skip_locked && flags.volatile_in_update {
                Backend::CLAIMS
            } else {
                &[ClaimStrategy::Optimistic]
            }
        }
        None => Backend::CLAIMS,
    }
}

/// The queue's connections keep one generic plan per prepared statement (`plan_cache_mode =
/// force_generic_plan`): under PostgreSQL's default the claim that carries completions was
/// planned anew at every execution. And those generic plans find the claimed and completed jobs
/// by primary key: with statistics taken while no job ran, a completion written plainly
/// scanned the whole partial lease index (every running job) per batch, and a claim (or a
/// prune chunk) joined with its chosen rows got a hash join over a sequential scan of the table.
async fn statements_are_planned_once_per_connection(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b.max_connections(1)).await?;
    let version: i32 = sqlx::query_scalar("SELECT current_setting('server_version_num')::int")
        .fetch_one(q.pool())
        .await?;
    if version < 140000 {
        drop_schema(&q).await?;
        return Err(conformance_tests::Skipped(format!(
            "server_version_num {version}: plan counts need PostgreSQL 14 or later"
        ))
        .into());
    }
    let mode: String = sqlx::query_scalar("SHOW plan_cache_mode")
        .fetch_one(q.pool())
        .await?;
    ensure!(mode == "force_generic_plan", "plan_cache_mode is {mode}");
    let jit: String = sqlx::query_scalar("SHOW jit").fetch_one(q.pool()).await?;
    ensure!(jit == "off", "jit is {jit}");
    // A table of some size, with statistics: on a handful of rows every plan costs the same.
    for _ in 0..4 {
        q.push_batch((0..1000).map(|i| job("plans-filler", i)).collect())
            .await?;
    }
    // And finished jobs, as a queue that keeps its history has (what pruning reads).
    sqlx::query(in_schema(
        "INSERT INTO {schema}.jobs (id, queue, payload, state, attempts, max_attempts, run_at, \
         finished_at) SELECT gen_random_uuid(), 'plans-done', '{}', 'completed', 1, 25, now(), \
         now() FROM generate_series(1, 4000)",
        q.schema(),
    ))
    .execute(q.pool())
    .await?;
    sqlx::query(in_schema("ANALYZE {schema}.jobs", q.schema()))
        .execute(q.pool())
        .await?;
    // The worker's cycle: a claim that carries the previous completion, then a plain one.
    q.push_batch((0..12).map(|i| job("plans", i)).collect())
        .await?;
    let request = queue_core::CheckedPop::new(
        queue_core::PopRequest {
            queue: "plans".into(),
            limit: 1,
            lease: Duration::from_secs(30),
            worker: "w".into(),
        },
        &q.capabilities().limits,
    )?;
    let mut leased = q.pop_checked(&request).await?;
    for _ in 0..11 {
        ensure!(leased.len() == 1, "claimed {}", leased.len());
        let (acked, next) = q
            .ack_batch_and_pop(&[leased[0].lease.clone()], &request)
            .await?;
        ensure!(acked == 1);
        leased = next?;
    }
    ensure!(q.ack_batch(&[leased[0].lease.clone()]).await? == 1);
    for i in 0..10 {
        q.push(job("plans-single", i)).await?;
    }
    let stats = q.stats(Some("plans")).await?;
    ensure!(stats[0].completed == 12, "{stats:?}");
    // One job at a time: heartbeat, then ack, fail (retry, then dead), release, or a merge of
    // metadata and a snooze.
    for step in 0..5 {
        let leased = q.pop(queue_core::PopRequest::new("plans-single")).await?;
        ensure!(leased.len() == 1, "claimed {}", leased.len());
        let lease = q.extend(&leased[0].lease, Duration::from_secs(30)).await?;
        let failure = match step {
            0 => None,
            1 => Some(queue_core::Failure::retryable("x")),
            2 => Some(queue_core::Failure::permanent("x")),
            3 => {
                q.release(&lease).await?;
                continue;
            }
            _ => {
                q.merge_meta(&lease, &serde_json::json!({"step": step}))
                    .await?;
                q.snooze(&lease, queue_core::Snooze::new(Duration::from_secs(3600)))
                    .await?;
                q.reschedule(leased[0].job.id, queue_core::Reschedule::new().now())
                    .await?;
                continue;
            }
        };
        match failure {
            None => q.ack(&lease).await?,
            Some(f) => drop(q.fail(&lease, f).await?),
        }
    }
    // A lease that runs out, and its rescue; the dead job back to pending.
    let expiring = q
        .pop(queue_core::PopRequest {
            lease: Duration::from_millis(20),
            ..queue_core::PopRequest::new("plans-single")
        })
        .await?;
    ensure!(expiring.len() == 1, "claimed {}", expiring.len());
    tokio::time::sleep(Duration::from_millis(100)).await;
    ensure!(q.rescue_expired().await? == 1);
    let dead = q
        .list(queue_core::ListRequest {
            queue: Some("plans-single".into()),
            state: Some(queue_core::JobState::Dead),
            ..Default::default()
        })
        .await?;
    ensure!(dead.len() == 1, "{dead:?}");
    q.retry(dead[0].id).await?;
    // Pruning, which deletes in chunks: nothing here is old enough.
    ensure!(
        q.prune(queue_core::PruneRequest::older_than(Duration::from_secs(
            3600
        )))
        .await?
            == 0
    );
    // A retention round, which begins with whole workflows: one created two hours ago whose
    // jobs are all gone is looked at and deleted (no job is old enough).
    sqlx::raw_sql(in_schema(
        "INSERT INTO {schema}.workflows (id, name, open, created_at) \
         VALUES (gen_random_uuid(), 'old', false, now() - interval '2 hours')",
        q.schema(),
    ))
    .execute(q.pool())
    .await?;
    let round = q
        .run_retention(
            &queue_core::Retention::off()
                .delete_after(queue_core::JobState::Completed, Duration::from_secs(3600)),
        )
        .await?;
    ensure!(
        round.is_some_and(|r| r.total() == 0 && r.workflows == 1),
        "{round:?}"
    );
    // Bulk operations, batch by batch, and the counts of every queue.
    let filler = queue_core::JobFilter {
        queue: Some("plans-filler".into()),
        ..Default::default()
    };
    let cancelled = q.bulk(queue_core::BulkAction::Cancel, &filler).await?;
    ensure!(cancelled.changed == 4000, "{cancelled:?}");
    let retried = q.bulk(queue_core::BulkAction::Retry, &filler).await?;
    ensure!(retried.changed == 4000, "{retried:?}");
    let deleted = q.bulk(queue_core::BulkAction::Delete, &filler).await?;
    ensure!(deleted.changed == 4000, "{deleted:?}");
    // Statistics of a table that is mostly finished jobs, as one that keeps its history is,
    // before the counts are planned (and the claim index cleaned of the bulk operations' dead
    // entries, as autovacuum would).
    sqlx::query(in_schema("VACUUM ANALYZE {schema}.jobs", q.schema()))
        .execute(q.pool())
        .await?;
    let all = q.stats(None).await?;
    ensure!(
        all.iter()
            .any(|s| s.queue == "plans-done" && s.completed == 4000),
        "{all:?}"
    );
    // One connection: these are the statements the calls above prepared on it.
    let plans: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT left(statement, 60), custom_plans, generic_plans \
         FROM pg_prepared_statements WHERE statement LIKE '%UNNEST(%' \
         AND statement NOT LIKE '%pg_prepared_statements%'",
    )
    .fetch_all(q.pool())
    .await?;
    // The single insert and the completion that claims ran at least eight times each.
    ensure!(
        plans.iter().filter(|(_, c, g)| c + g >= 8).count() >= 2,
        "{plans:?}"
    );
    for (statement, custom, generic) in &plans {
        ensure!(
            *custom <= 5,
            "{statement}: {custom} custom plans, {generic} generic"
        );
    }
    // The plans those statements keep: EXPLAIN EXECUTE shows the cached generic plan. Each
    // statement is found by its exact text, as the driver loads it from its file.
    macro_rules! statement {
        ($name:literal) => {
            (
                $name,
                queue_core::engine::statements::load(
                    include_str!(concat!("../../queue-postgres/queries/", $name, ".sql")),
                    &[("{schema}", q.schema())],
                ),
            )
        };
    }
    let expected = [
        statement!("job_complete_and_claim_after"),
        statement!("job_complete_many"),
        statement!("job_complete"),
        statement!("job_extend"),
        statement!("job_fail_retry"),
        statement!("job_fail_dead"),
        statement!("job_release"),
        statement!("job_rescue"),
        statement!("job_retry"),
        statement!("job_prune"),
        statement!("job_snooze"),
        statement!("job_meta_get"),
        statement!("job_meta_set"),
        statement!("job_reschedule"),
        statement!("job_cancel_many"),
        statement!("job_retry_many"),
        statement!("job_delete_many"),
        statement!("job_stats"),
        statement!("workflow_prune_lock"),
        statement!("workflow_prune"),
    ];
    let prepared: Vec<(String, String, i32)> = sqlx::query_as(
        "SELECT name, statement, cardinality(parameter_types) FROM pg_prepared_statements",
    )
    .fetch_all(q.pool())
    .await?;
    // The claim from the head runs unnamed, planned at each execution: a plan prepared on the
    // connection's first claim, on an empty queue, would keep reading the claimed ids with a
    // sequential scan once the table has grown.
    let (_, head_claim) = statement!("job_claim");
    ensure!(
        !prepared.iter().any(|(_, s, _)| *s == head_claim),
        "job_claim was prepared on the test's connection"
    );
    for (file, text) in &expected {
        let Some((name, _, params)) = prepared.iter().find(|(_, s, _)| s == text) else {
            anyhow::bail!("{file} was not prepared on the test's connection");
        };
        // The name is sqlx's own (`sqlx_s_<n>`); checked before it goes into the statement.
        ensure!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{name}"
        );
        let args = vec!["NULL"; *params as usize].join(", ");
        let plan: Vec<String> =
            sqlx::query_scalar(AssertSqlSafe(format!("EXPLAIN EXECUTE {name}({args})")))
                .fetch_all(q.pool())
                .await?;
        let plan = plan.join("\n");
        if *file == "job_stats" {
            // The queues with finished jobs are found by skipping along their index, and each
            // finished state of each is counted along it, an index range with the cap as its
            // limit. (How the few live jobs are counted is the planner's choice.)
            ensure!(
                plan.matches("jobs_finished_by_queue_idx").count() >= 4
                    && plan.contains("Index Cond: (queue >= $1)")
                    && plan
                        .matches("Index Cond: ((queue = q.queue) AND (state =")
                        .count()
                        == 3,
                "{file}\n{plan}"
            );
            continue;
        }
        if *file == "job_prune" {
            // The queues with finished jobs are found by skipping along their index, and each
            // queue's and state's oldest finished jobs are a range of it; the rows are deleted
            // by primary key.
            ensure!(
                plan.matches("jobs_finished_by_queue_idx").count() >= 3
                    && plan.contains("Index Cond: (queue >= $3)")
                    && plan.contains("(state = s.state) AND (finished_at <")
                    && plan.contains("jobs_pkey")
                    && !plan.contains("Seq Scan on jobs "),
                "{file}\n{plan}"
            );
            continue;
        }
        if *file == "workflow_prune_lock" {
            // A range of the workflows' index by age, from the cursor on.
            ensure!(
                plan.contains("using workflows_created_idx on workflows")
                    && plan.contains("Index Cond: ((created_at < ")
                    && !plan.contains("Seq Scan on workflows"),
                "{file}\n{plan}"
            );
            continue;
        }
        if *file == "workflow_prune" {
            // The workflows by their primary key, each one's jobs checked by a subplan of its
            // own (looked up in jobs_pkey, never a join that could hash the jobs table).
            ensure!(
                plan.contains("on workflows_pkey")
                    // PostgreSQL 15 prints `NOT (SubPlan 1)`, 18 `NOT EXISTS(SubPlan 1)`.
                    && (plan.contains("Filter: (NOT (SubPlan 1))")
                        || plan.contains("Filter: (NOT EXISTS(SubPlan 1))"))
                    && plan.contains("using jobs_pkey on jobs j")
                    && !plan.contains("Seq Scan on jobs "),
                "{file}\n{plan}"
            );
            continue;
        }
        // "jobs " with its space: jobs_done, empty unless finished partitions are on, may be
        // read whole.
        ensure!(
            !plan.contains("Seq Scan on jobs ")
                && !plan.contains("jobs_lease_idx")
                && (file.contains("claim") || !plan.contains("jobs_claim_idx"))
                && plan.contains("jobs_pkey"),
            "{file}\n{plan}"
        );
    }
    drop_schema(&q).await
}

/// The cancellation of a failure's dependents locks only what it decides from: with it running
/// (in an open transaction) over a waiting job whose one dependency is pending, another session
/// can lock that dependency at once (a claim or completion of it never waits); over a job whose
/// dependency is dead, it holds that dependency against a retry until it commits.
async fn a_block_locks_only_failed_dependencies(server: Server) -> anyhow::Result<()> {
    use queue_core::{Failure, Workflow};
    let q = fresh(&server, |b| b).await?;
    let live = q
        .push_workflow(
            Workflow::new()
                .add("a", job("bl", 1))
                .add_after("b", job("bl", 2), ["a"]),
        )
        .await?;
    let (a, b) = (live.job("a").context("a")?, live.job("b").context("b")?);
    let statement = queue_core::engine::statements::load(
        include_str!("../../queue-postgres/queries/workflow_block.sql"),
        &[("{schema}", q.schema())],
    );
    async fn block(
        tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
        statement: &str,
        id: JobId,
    ) -> Result<sqlx::postgres::PgQueryResult, sqlx::Error> {
        sqlx::query(AssertSqlSafe(statement.to_owned()))
            .bind(vec![id.0])
            .persistent(false)
            .execute(&mut **tx)
            .await
    }
    let lock_now = |id: JobId| {
        let q = q.clone();
        async move {
            let mut other = q.pool().begin().await?;
            let locked = sqlx::query(in_schema(
                "SELECT 1 FROM {schema}.jobs WHERE id = $1 FOR UPDATE NOWAIT",
                q.schema(),
            ))
            .bind(id.0)
            .persistent(false)
            .fetch_optional(&mut *other)
            .await;
            other.rollback().await?;
            anyhow::Ok(locked.is_ok())
        }
    };
    let mut tx = q.pool().begin().await?;
    ensure!(block(&mut tx, &statement, b).await?.rows_affected() == 0);
    ensure!(
        lock_now(a).await?,
        "a pending dependency was locked by the block"
    );
    tx.rollback().await?;
    // A dead dependency: held until the block commits.
    let l = q.pop(queue_core::PopRequest::new("bl")).await?;
    ensure!(l.len() == 1 && l[0].job.id == a);
    // The settling after the failure would cancel b: undo that, so that the block below does.
    q.fail(&l[0].lease, Failure::permanent("boom")).await?;
    sqlx::query(in_schema(
        "UPDATE {schema}.jobs SET state = 'waiting', blocked_by = NULL, finished_at = NULL \
         WHERE id = $1",
        q.schema(),
    ))
    .bind(b.0)
    .persistent(false)
    .execute(q.pool())
    .await?;
    let mut tx = q.pool().begin().await?;
    ensure!(block(&mut tx, &statement, b).await?.rows_affected() == 1);
    ensure!(
        !lock_now(a).await?,
        "the dead dependency a block decided from was not held"
    );
    tx.commit().await?;
    ensure!(lock_now(a).await?);
    drop_schema(&q).await
}

/// Keyed claims on a table that was never analyzed (autovacuum off, or a new table in its first
/// minute) keep plans that walk the index of keyed jobs: the generic plans that the keyed
/// claim's statements keep on the connection read `jobs_key_idx` and never `jobs_claim_idx`,
/// which on such a table costs the planner as little and sorts every pending job of the queue
/// at each step from key to key. And the skip scan over 32 keys of a 20,000-job flood reads a
/// few pages per key, counted by `EXPLAIN (ANALYZE, BUFFERS)` of the very statement.
async fn keyed_claims_walk_the_key_index_without_statistics(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b.max_connections(1)).await?;
    // No statistics for the whole test, whatever the server's autovacuum does.
    sqlx::query(in_schema(
        "ALTER TABLE {schema}.jobs SET (autovacuum_enabled = false)",
        q.schema(),
    ))
    .execute(q.pool())
    .await?;
    q.set_key_limit("plans-keyed", Some(1)).await?;
    q.set_key_rate_limit(
        "plans-rated",
        Some(queue_core::RateLimit::new(1000, Duration::from_secs(1))?),
    )
    .await?;
    // 20,000 jobs of 100 keys, interleaved as a flood of many customers' jobs is: enough for
    // the key index to be a level taller than the claim index, which is what makes the
    // planner without statistics prefer the claim index.
    for chunk in 0..20 {
        q.push_batch(
            (0..1000)
                .map(|i| {
                    let n = chunk * 1000 + i;
                    job("plans-keyed", n).concurrency_key(format!("key-{:03}", n % 100))
                })
                .collect(),
        )
        .await?;
    }
    q.push_batch(
        (0..100)
            .map(|i| job("plans-rated", i).concurrency_key(if i < 50 { "a" } else { "b" }))
            .collect(),
    )
    .await?;
    let analyzed: Option<i64> = sqlx::query_scalar(in_schema(
        "SELECT reltuples::bigint FROM pg_class WHERE oid = '{schema}.jobs'::regclass \
         AND reltuples >= 0",
        q.schema(),
    ))
    .fetch_optional(q.pool())
    .await?;
    ensure!(analyzed.is_none(), "the table has statistics: {analyzed:?}");
    // Claims of both queues prepare the keyed statements on the one connection, inside the
    // keyed claim's transaction: the plans they keep are made there.
    for queue in ["plans-keyed", "plans-rated"] {
        let got = q
            .pop(
                queue_core::PopRequest::new(queue)
                    .limit(10)
                    .lease(Duration::from_secs(60)),
            )
            .await?;
        // At a key limit of 1, one job of each of ten keys; under the key rate, the first
        // key's room.
        let want = 10;
        ensure!(got.len() == want, "{queue}: {} claimed", got.len());
    }
    macro_rules! statement {
        ($name:literal) => {
            (
                $name,
                queue_core::engine::statements::load(
                    include_str!(concat!("../../queue-postgres/queries/", $name, ".sql")),
                    &[("{schema}", q.schema())],
                ),
            )
        };
    }
    let prepared: Vec<(String, String, i32)> = sqlx::query_as(
        "SELECT name, statement, cardinality(parameter_types) FROM pg_prepared_statements",
    )
    .fetch_all(q.pool())
    .await?;
    for (file, text) in [
        statement!("job_key_next"),
        statement!("job_claim_keys"),
        statement!("job_claim_key"),
    ] {
        let Some((name, _, params)) = prepared.iter().find(|(_, s, _)| *s == text) else {
            anyhow::bail!("{file} was not prepared on the test's connection");
        };
        ensure!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{name}"
        );
        let args = vec!["NULL"; *params as usize].join(", ");
        let plan: Vec<String> =
            sqlx::query_scalar(AssertSqlSafe(format!("EXPLAIN EXECUTE {name}({args})")))
                .fetch_all(q.pool())
                .await?;
        let plan = plan.join("\n");
        ensure!(
            plan.contains("jobs_key_idx") && !plan.contains("jobs_claim_idx"),
            "{file}\n{plan}"
        );
    }
    // What the skip scan reads when it runs: the 32 keys after key-050, 200 jobs each, one
    // descent per key, in the plan the connection keeps (run in a transaction with the keyed
    // claim's settings, rolled back).
    let (name, _, _) = prepared
        .iter()
        .find(|(_, s, _)| *s == statement!("job_key_next").1)
        .context("job_key_next")?;
    let mut tx = q.pool().begin().await?;
    sqlx::query("SELECT set_config('enable_sort', 'off', true), set_config('jit', 'off', true)")
        .execute(&mut *tx)
        .await?;
    let plan: Vec<String> = sqlx::query_scalar(AssertSqlSafe(format!(
        "EXPLAIN (ANALYZE, BUFFERS) EXECUTE {name}('plans-keyed', 'key-050', 32)"
    )))
    .fetch_all(&mut *tx)
    .await?;
    tx.rollback().await?;
    let plan = plan.join("\n");
    // The pages touched in all (the top node's count): a walk of the claim index fetches each
    // of the queue's 20,000 pending jobs at every step.
    ensure!(plan.contains("jobs_key_idx"), "{plan}");
    let hits: u64 = plan
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Buffers: shared hit="))
        .filter_map(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    ensure!(
        hits < 500,
        "the skip scan read {hits} pages for 32 keys\n{plan}"
    );
    drop_schema(&q).await
}

/// Claims through a backlog while another session holds a `REPEATABLE READ` snapshot: every
/// claimed job leaves its entry in `jobs_claim_idx`, which vacuum may not remove while the
/// snapshot stands, so a claim from the head of the queue walks all of them; the queue's claims
/// continue from their position instead (`job_claim_after`, prepared by the very claims), and
/// that statement reads a few pages where the claim from the head reads hundreds, counted by
/// `EXPLAIN (ANALYZE, BUFFERS)` in a transaction rolled back.
async fn claims_under_a_held_snapshot_continue_from_their_position(
    server: Server,
) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b.max_connections(1)).await?;
    for chunk in 0..5 {
        q.push_batch((0..1000).map(|i| job("held", chunk * 1000 + i)).collect())
            .await?;
    }
    let mut holder = <sqlx::PgConnection as sqlx::Connection>::connect(&server.url).await?;
    sqlx::raw_sql("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut holder)
        .await?;
    sqlx::query(in_schema("SELECT count(*) FROM {schema}.jobs", q.schema()))
        .execute(&mut holder)
        .await?;
    let mut last = None;
    for _ in 0..8 {
        let got = q
            .pop(
                queue_core::PopRequest::new("held")
                    .limit(500)
                    .lease(Duration::from_secs(60)),
            )
            .await?;
        ensure!(got.len() == 500, "a claim of 500 got {}", got.len());
        last = got.last().map(|l| l.job.clone());
    }
    let last = last.context("no claim")?;
    let after = queue_core::engine::statements::load(
        include_str!("../../queue-postgres/queries/job_claim_after.sql"),
        &[("{schema}", q.schema())],
    );
    let prepared: Vec<String> = sqlx::query_scalar("SELECT statement FROM pg_prepared_statements")
        .fetch_all(q.pool())
        .await?;
    ensure!(
        prepared.contains(&after),
        "the claims did not continue from a position (job_claim_after was never prepared)"
    );
    let head = queue_core::engine::statements::load(
        include_str!("../../queue-postgres/queries/job_claim.sql"),
        &[("{schema}", q.schema())],
    );
    let mut pages = Vec::new();
    for (name, text, position) in [
        ("job_claim", &head, false),
        ("job_claim_after", &after, true),
    ] {
        let mut tx = q.pool().begin().await?;
        let mut query =
            sqlx::query_scalar(AssertSqlSafe(format!("EXPLAIN (ANALYZE, BUFFERS) {text}")))
                .bind("held")
                .bind(10_i64)
                .bind(60_000_000_i64)
                .bind("explain")
                .bind(false);
        if position {
            query = query.bind(last.priority).bind(last.run_at).bind(last.id.0);
        }
        let plan: Vec<String> = query.fetch_all(&mut *tx).await?;
        tx.rollback().await?;
        let plan = plan.join("\n");
        // What the choice of the rows read (CTE c, the locking read of the claim index), not
        // the update of the rows it chose, which is the same for both.
        let hits: u64 = plan
            .split_once("CTE c")
            .map(|(_, chosen)| chosen)
            .into_iter()
            .flat_map(str::lines)
            .find_map(|l| l.trim().strip_prefix("Buffers: shared hit="))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        ensure!(plan.contains("jobs_claim_idx"), "{name}\n{plan}");
        pages.push((name, hits, plan));
    }
    sqlx::raw_sql("ROLLBACK").execute(&mut holder).await?;
    let (_, from_head, head_plan) = &pages[0];
    let (_, from_position, position_plan) = &pages[1];
    // Past 4,000 claimed jobs the claim from the head visits the pages of their rows (100 and
    // more); the claim from the position a few index pages and the pages of the rows it takes
    // (17 here).
    ensure!(
        *from_head > 100,
        "the claim from the head read only {from_head} pages past 4,000 claimed jobs\n{head_plan}"
    );
    ensure!(
        *from_position * 4 < *from_head,
        "the claim from the position read {from_position} pages, from the head \
         {from_head}\n{position_plan}"
    );
    drop_schema(&q).await
}

/// Whether the suite's URL goes through a pooler in transaction mode (`pooler=transaction`).
/// The catalogue then runs through it; the dialect tests, which look at PostgreSQL's own
/// sessions (backend pids, LISTEN, roles), need a direct connection and show as ignored.
fn behind_transaction_pooler() -> bool {
    std::env::var("QUEUE_TEST_POSTGRES_URL").is_ok_and(|u| u.contains("pooler=transaction"))
}

fn main() -> std::process::ExitCode {
    let mut dialect = conformance_tests::dialect_tests![
        the_error_history_keeps_the_newest_entries,
        one_notification_per_queue_per_transaction,
        single_push_notifications_are_coalesced_but_never_lost,
        the_listener_reconnects_after_its_backend_is_killed,
        a_killed_connection_is_unavailable_once_then_replaced,
        batches_span_chunks_atomically,
        large_batches_are_copied_atomically,
        an_extension_that_waits_for_a_row_lock_gets_its_full_lease,
        bad_configuration_and_unreachable_servers,
        the_claim_reads_the_claim_index,
        a_host_list_skips_servers_that_do_not_answer,
        a_read_only_server_is_unavailable_until_it_takes_writes_again,
        poll_only_mode_neither_notifies_nor_listens,
        claims_that_fail_with_40001_are_retried_and_lose_nothing,
        a_listen_connection_that_hears_nothing_is_reported,
        statements_are_planned_once_per_connection,
        a_prune_spares_a_job_retried_while_it_waited,
        keyed_claims_walk_the_key_index_without_statistics,
        claims_under_a_held_snapshot_continue_from_their_position,
        a_block_locks_only_failed_dependencies,
        finished_partitions_keep_finished_jobs_apart,
        finished_partitions_turn_on_with_jobs_in_every_state,
        finished_partitions_refuse_bad_input,
        finished_partitions_moves_carry_every_column,
    ];
    if behind_transaction_pooler() {
        dialect.extend(conformance_tests::dialect_tests![
            a_listen_through_a_transaction_pooler_is_reported
        ]);
        for test in dialect.iter_mut().filter(|t| !t.name.contains("pooler")) {
            test.run = |_| {
                Box::pin(async {
                    Err(conformance_tests::Skipped(
                        "a dialect test needs a direct connection, not pooler=transaction".into(),
                    )
                    .into())
                })
            };
        }
    }
    conformance_tests::main_with::<Backend>(claims(), dialect)
}
