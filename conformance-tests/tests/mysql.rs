//! The conformance suite on MySQL and MariaDB (a table prefix `t<random>_` per case, both claim
//! strategies, 32 concurrent poppers), and what is theirs alone: server detection and session
//! settings, packet and placeholder limits, statement chunking, the claim's query plan.

use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use async_trait::async_trait;
use conformance_tests::servers::random_suffix;
use conformance_tests::{Discovery, Namespace, Server, SqlBackend, TestConfig};
use queue_core::{
    ClaimStrategy, Dialect, Error, JobId, JobState, Lease, Limits, NewJob, PopRequest, Queue,
};
use queue_mysql::{MySqlQueue, MySqlQueueBuilder};
use sqlx::{AssertSqlSafe, MySql, Row, Transaction};

struct Backend;

fn builder(url: &str, prefix: &str) -> MySqlQueueBuilder {
    MySqlQueue::builder(url)
        .table_prefix(prefix)
        .max_connections(40)
        .connect_timeout(Duration::from_secs(5))
}

/// A statement naming tables of `prefix`, a plain identifier made by the suite (`t` and hex).
fn in_prefix(sql: &str, prefix: &str) -> AssertSqlSafe<String> {
    AssertSqlSafe(sql.replace("{prefix}", prefix))
}

#[async_trait]
impl SqlBackend for Backend {
    type Db = MySql;
    type Queue = MySqlQueue;
    const NAME: &'static str = "mysql";
    const CLAIMS: &'static [ClaimStrategy] =
        &[ClaimStrategy::SkipLocked, ClaimStrategy::Optimistic];
    const POPPERS: usize = 32;

    async fn servers() -> Discovery {
        conformance_tests::servers::mysql().await
    }

    fn namespace(_server: &Server) -> anyhow::Result<Namespace> {
        Ok(Namespace::named(format!("t{}_", random_suffix())))
    }

    async fn connect(
        server: &Server,
        ns: &str,
        config: &TestConfig,
    ) -> queue_core::Result<MySqlQueue> {
        let b = builder(&server.url, ns)
            .claim_strategy(config.claim)
            .retry_policy(config.retry.clone())
            .limits(config.limits.clone())
            .keep_completed_jobs(config.keep_completed);
        match conformance_tests::test_profile() {
            Some(profile) => b.profile(profile).connect().await,
            None => b.connect().await,
        }
    }

    async fn unreachable(config: &TestConfig) -> queue_core::Result<MySqlQueue> {
        MySqlQueue::builder("mysql://root:secret@127.0.0.1:1/test")
            .claim_strategy(config.claim)
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await
    }

    async fn seed_previous_release(
        q: &MySqlQueue,
        ns: &str,
    ) -> anyhow::Result<Option<Vec<(JobId, JobState)>>> {
        use queue_core::Backend as _;
        // Migration 4 (schedules) was the newest before job kinds.
        q.engine().migrate_until(4).await?;
        let mut seeded = Vec::new();
        for (state, attempts, lease, worker, error, finished) in [
            ("pending", 0u32, false, None, None, false),
            ("running", 1, true, Some("old-worker"), None, false),
            ("completed", 1, false, Some("old-worker"), None, true),
            ("dead", 3, false, Some("old-worker"), Some("boom"), true),
            ("cancelled", 0, false, None, None, true),
        ] {
            let id = JobId::new();
            sqlx::query(in_prefix(
                "INSERT INTO {prefix}jobs (id, queue, payload, priority, state, attempts, \
                 max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, \
                 dedup_key, version, created_at, updated_at, finished_at) \
                 VALUES (?, 'legacy', '{\"old\": true}', 0, ?, ?, 3, \
                 TIMESTAMPADD(SECOND, -5, UTC_TIMESTAMP(6)), ?, \
                 IF(?, TIMESTAMPADD(SECOND, -1, UTC_TIMESTAMP(6)), NULL), ?, ?, NULL, 1, \
                 TIMESTAMPADD(SECOND, -5, UTC_TIMESTAMP(6)), TIMESTAMPADD(SECOND, -4, UTC_TIMESTAMP(6)), \
                 IF(?, TIMESTAMPADD(SECOND, -4, UTC_TIMESTAMP(6)), NULL))",
                ns,
            ))
            .bind(id.0)
            .bind(state)
            .bind(attempts)
            .bind(lease.then(uuid::Uuid::new_v4))
            .bind(lease)
            .bind(worker)
            .bind(error)
            .bind(finished)
            .execute(q.pool())
            .await?;
            seeded.push((id, state.parse()?));
        }
        Ok(Some(seeded))
    }

    async fn migrate_previous_schema(q: &MySqlQueue) -> anyhow::Result<bool> {
        use queue_core::Backend as _;
        // Migration 13 merged the indexes of expired leases and finished jobs into one.
        q.engine().migrate_until(12).await?;
        Ok(true)
    }

    async fn create_effects(q: &MySqlQueue, ns: &str) -> anyhow::Result<()> {
        sqlx::query(in_prefix(
            "CREATE TABLE {prefix}effects (marker VARCHAR(255) NOT NULL) ENGINE = InnoDB",
            ns,
        ))
        .execute(q.pool())
        .await?;
        Ok(())
    }

    async fn insert_effect(
        tx: &mut Transaction<'static, MySql>,
        ns: &str,
        marker: &str,
    ) -> anyhow::Result<()> {
        sqlx::query(in_prefix(
            "INSERT INTO {prefix}effects (marker) VALUES (?)",
            ns,
        ))
        .bind(marker)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    async fn count_effects(q: &MySqlQueue, ns: &str, marker: &str) -> anyhow::Result<u64> {
        let n: i64 = sqlx::query_scalar(in_prefix(
            "SELECT COUNT(*) FROM {prefix}effects WHERE marker = ?",
            ns,
        ))
        .bind(marker)
        .fetch_one(q.pool())
        .await?;
        Ok(n as u64)
    }

    async fn begin(q: &MySqlQueue) -> queue_core::Result<Transaction<'static, MySql>> {
        q.pool().begin().await.map_err(Error::database)
    }

    async fn push_in_tx(
        q: &MySqlQueue,
        tx: &mut Transaction<'static, MySql>,
        job: NewJob,
    ) -> queue_core::Result<JobId> {
        q.push_in_tx(tx, job).await
    }

    async fn push_batch_in_tx(
        q: &MySqlQueue,
        tx: &mut Transaction<'static, MySql>,
        jobs: Vec<NewJob>,
    ) -> queue_core::Result<Vec<JobId>> {
        q.push_batch_in_tx(tx, jobs).await
    }

    async fn push_workflow_in_tx(
        q: &MySqlQueue,
        tx: &mut Transaction<'static, MySql>,
        workflow: queue_core::Workflow,
    ) -> queue_core::Result<queue_core::PushedWorkflow> {
        q.push_workflow_in_tx(tx, workflow).await
    }

    async fn complete_in_tx(
        q: &MySqlQueue,
        tx: &mut Transaction<'static, MySql>,
        lease: &Lease,
    ) -> queue_core::Result<()> {
        q.complete_in_tx(tx, lease).await
    }

    async fn lock_job(
        tx: &mut Transaction<'static, MySql>,
        ns: &str,
        id: JobId,
    ) -> anyhow::Result<()> {
        sqlx::query(in_prefix(
            "SELECT 1 FROM {prefix}jobs WHERE id = ? FOR UPDATE",
            ns,
        ))
        .bind(id.0)
        .fetch_optional(&mut **tx)
        .await?;
        Ok(())
    }

    async fn break_reopen(q: &MySqlQueue, ns: &str, id: JobId) -> anyhow::Result<()> {
        sqlx::query(in_prefix(
            "CREATE TABLE IF NOT EXISTS {prefix}broken_reopens (id BINARY(16) NOT NULL PRIMARY KEY) \
             ENGINE = InnoDB",
            ns,
        ))
        .execute(q.pool())
        .await?;
        sqlx::raw_sql(in_prefix(
            "CREATE TRIGGER IF NOT EXISTS {prefix}broken_reopen BEFORE UPDATE ON {prefix}jobs \
             FOR EACH ROW BEGIN \
               IF OLD.state = 'cancelled' AND NEW.state = 'waiting' \
                  AND EXISTS (SELECT 1 FROM {prefix}broken_reopens b WHERE b.id = OLD.id) THEN \
                 SIGNAL SQLSTATE '45000' \
                   SET MESSAGE_TEXT = 'a fault of the test: this step cannot wait again'; \
               END IF; \
             END",
            ns,
        ))
        .execute(q.pool())
        .await?;
        sqlx::query(in_prefix(
            "INSERT INTO {prefix}broken_reopens (id) VALUES (?)",
            ns,
        ))
        .bind(id.0)
        .execute(q.pool())
        .await?;
        Ok(())
    }

    async fn mend(q: &MySqlQueue, ns: &str) -> anyhow::Result<()> {
        sqlx::query(in_prefix(
            "DROP TRIGGER IF EXISTS {prefix}broken_reopen",
            ns,
        ))
        .execute(q.pool())
        .await?;
        sqlx::query(in_prefix("DROP TABLE IF EXISTS {prefix}broken_reopens", ns))
            .execute(q.pool())
            .await?;
        Ok(())
    }

    async fn drop_namespace(q: &MySqlQueue, ns: &str) -> anyhow::Result<()> {
        Self::mend(q, ns).await?;
        sqlx::query(in_prefix("DROP TABLE IF EXISTS {prefix}effects", ns))
            .execute(q.pool())
            .await?;
        q.drop_tables().await?;
        q.pool().close().await;
        Ok(())
    }

    async fn close(q: &MySqlQueue) {
        q.pool().close().await;
    }
}

/// A migrated queue with its own tables, set up by `f`.
async fn fresh(
    server: &Server,
    f: impl FnOnce(MySqlQueueBuilder) -> MySqlQueueBuilder,
) -> anyhow::Result<MySqlQueue> {
    let q = f(builder(&server.url, &format!("t{}_", random_suffix())))
        .connect()
        .await?;
    q.migrate().await?;
    Ok(q)
}

async fn count(q: &MySqlQueue, condition: &'static str) -> anyhow::Result<i64> {
    let sql = format!("SELECT COUNT(*) FROM {{prefix}}jobs WHERE {condition}");
    Ok(sqlx::query_scalar(in_prefix(&sql, q.table_prefix()))
        .fetch_one(q.pool())
        .await?)
}

fn job(queue: &str, n: u64) -> NewJob {
    NewJob::new(queue, &serde_json::json!({ "n": n })).expect("a JSON value serializes")
}

/// Connections are not pinged before each call (only after sitting idle): one the server
/// dropped fails at most one call, with a transient error, and is replaced.
async fn a_killed_connection_is_unavailable_once_then_replaced(
    server: Server,
) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b.max_connections(1)).await?;
    let admin = builder(&server.url, "unused_").connect().await?;
    let id = q.push(job("k", 1)).await?;
    let thread: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
        .fetch_one(q.pool())
        .await?;
    sqlx::query("KILL CONNECTION ?")
        .bind(thread)
        .execute(admin.pool())
        .await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    if let Err(e) = q.get(id).await {
        ensure!(
            e.is_transient(),
            "a dropped connection is Unavailable: {e:?}"
        );
    }
    ensure!(
        q.get(id).await?.is_some(),
        "the pool replaced the dead connection"
    );
    let replaced: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
        .fetch_one(q.pool())
        .await?;
    ensure!(replaced != thread, "still on the killed connection");
    q.drop_tables().await?;
    Ok(())
}

/// The server is detected (MySQL or MariaDB), and every session is UTC and READ COMMITTED.
async fn capabilities_and_detection(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let caps = q.capabilities();
    let version = caps.server_version.clone().unwrap_or_default();
    let expect = if version.contains("MariaDB") {
        Dialect::MariaDb
    } else {
        Dialect::MySql
    };
    ensure!(caps.dialect == expect, "{version}: {:?}", caps.dialect);
    ensure!(caps.claim == ClaimStrategy::SkipLocked);
    let tz: String = sqlx::query_scalar("SELECT @@session.time_zone")
        .fetch_one(q.pool())
        .await?;
    ensure!(tz == "+00:00", "{tz}");
    // MySQL 8 and MariaDB 11.1+ name it transaction_isolation, older MariaDB tx_isolation.
    let iso: String = match sqlx::query_scalar("SELECT @@session.transaction_isolation")
        .fetch_one(q.pool())
        .await
    {
        Ok(v) => v,
        Err(_) => {
            sqlx::query_scalar("SELECT @@session.tx_isolation")
                .fetch_one(q.pool())
                .await?
        }
    };
    ensure!(iso == "READ-COMMITTED", "{iso}");
    let db_now = q.now().await?;
    ensure!((db_now - chrono::Utc::now()).num_seconds().abs() < 5);
    q.drop_tables().await?;
    Ok(())
}

/// Settings are checked before connecting; limits the server cannot carry are refused; a
/// closed port is Unavailable with its address and without the password.
async fn bad_settings_and_unreachable_servers(server: Server) -> anyhow::Result<()> {
    let field = |r: queue_core::Result<MySqlQueue>| match r {
        Err(Error::InvalidInput { field, .. }) => Ok(field),
        other => Err(anyhow::anyhow!("expected InvalidInput, got {other:?}")),
    };
    let url = &server.url;
    ensure!(
        field(
            MySqlQueue::builder(url)
                .table_prefix("bad-prefix;")
                .connect()
                .await
        )? == "table_prefix"
    );
    ensure!(
        field(
            MySqlQueue::builder(url)
                .table_prefix("p".repeat(55))
                .connect()
                .await
        )? == "table_prefix"
    );
    ensure!(
        field(
            MySqlQueue::builder(url)
                .claim_strategy(ClaimStrategy::WriteLock)
                .connect()
                .await
        )? == "claim_strategy"
    );
    ensure!(
        field(
            MySqlQueue::builder("postgres://u:secret@h/db")
                .connect()
                .await
        )? == "url"
    );
    let huge = Limits {
        max_payload_bytes: 2 * 1024 * 1024 * 1024,
        ..Limits::default()
    };
    ensure!(
        field(MySqlQueue::builder(url).limits(huge).connect().await)? == "limits.max_payload_bytes"
    );
    let wide = Limits {
        max_pop: 50_000,
        ..Limits::default()
    };
    ensure!(field(MySqlQueue::builder(url).limits(wide).connect().await)? == "limits.max_pop");
    conformance_tests::expect_refused_connection(|| {
        MySqlQueue::builder("mariadb://user:hunter2@127.0.0.1:1/db")
            .connect_timeout(Duration::from_millis(500))
            .connect()
    })
    .await?;
    Ok(())
}

/// Batches beyond one statement (500 rows) are split inside one transaction: all stored, or
/// none when a row of the last chunk clashes; the clash names its key.
async fn push_batch_is_chunked_and_atomic(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let jobs: Vec<_> = (0..1_234).map(|n| job("b", n)).collect();
    let want: Vec<_> = jobs.iter().map(|j| j.id()).collect();
    ensure!(q.push_batch(jobs).await? == want);
    ensure!(count(&q, "queue = 'b' AND state = 'pending'").await? == 1_234);
    q.push(job("c", 0).dedup_key("last")).await?;
    let mut jobs: Vec<_> = (0..1_100).map(|n| job("c", n)).collect();
    jobs.push(job("c", 9).dedup_key("last"));
    match q.push_batch(jobs).await {
        Err(Error::Duplicate { queue, dedup_key }) => ensure!(queue == "c" && dedup_key == "last"),
        other => bail!("expected Duplicate, got {other:?}"),
    }
    ensure!(count(&q, "queue = 'c'").await? == 1);
    // ack_batch of 100 in one statement; a lease acked before is skipped.
    let leased = q.pop(PopRequest::new("b").limit(100)).await?;
    ensure!(leased.len() == 100);
    q.ack(&leased[0].lease).await?;
    let leases: Vec<_> = leased.iter().map(|l| l.lease.clone()).collect();
    ensure!(q.ack_batch(&leases).await? == 99);
    ensure!(count(&q, "state = 'completed'").await? == 100);
    q.drop_tables().await?;
    Ok(())
}

/// The claim is an ascending scan of index `claim`, without a sort.
async fn the_claim_reads_the_claim_index(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    q.push_batch(
        (0..200)
            .map(|n| job("x", n).priority((n % 4) as i32))
            .collect(),
    )
    .await?;
    let row = sqlx::query(in_prefix(
        "EXPLAIN SELECT id FROM {prefix}jobs WHERE queue = 'x' AND state = 'pending' \
         AND run_at <= UTC_TIMESTAMP(6) ORDER BY claim_priority, run_at, id LIMIT 10 \
         FOR UPDATE SKIP LOCKED",
        q.table_prefix(),
    ))
    .fetch_one(q.pool())
    .await?;
    let key: Option<String> = row.try_get_unchecked("key")?;
    let extra: Option<String> = row.try_get_unchecked("Extra")?;
    ensure!(key.as_deref() == Some("claim"), "{key:?}");
    ensure!(
        !extra.unwrap_or_default().contains("filesort"),
        "the claim must not sort"
    );
    q.drop_tables().await?;
    Ok(())
}

/// A claim from a position reads ranges of index `claim` bounded by the position, without a
/// sort: the jobs after it on all five parts of the index (a batch of jobs pushed at once
/// shares one run_at, and the entries before the position are those of jobs claimed already),
/// and the higher priorities only up to the position's. The statements are the driver's own
/// files, explained with the values a claim binds.
async fn a_claim_from_a_position_reads_ranges_of_the_claim_index(
    server: Server,
) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    // A backlog in one batch (one run_at), where MariaDB's optimizer would rather read the
    // (queue, state) prefix than the range; a few jobs of a higher priority, claimed first.
    q.push_batch(
        (0..5_000)
            .map(|n| job("x", n).priority(i32::from(n % 1_000 == 0)))
            .collect(),
    )
    .await?;
    let leased = q.pop(PopRequest::new("x").limit(10)).await?;
    ensure!(leased.iter().filter(|l| l.job.priority == 1).count() == 5);
    ensure!(leased.len() == 10);
    let last = &leased[9].job;
    let claim_priority = -i64::from(last.priority);
    // (statement, values, the index parts its range is bounded on)
    let after = include_str!("../../queue-mysql/queries/job_claim_after.sql");
    let ahead = include_str!("../../queue-mysql/queries/job_claim_ahead.sql");
    let any = include_str!("../../queue-mysql/queries/job_claim_ahead_any.sql");
    for (name, text, parts) in [("after", after, 5), ("ahead", ahead, 3), ("any", any, 3)] {
        let explain = |format: &str| {
            let sql = in_prefix(&format!("EXPLAIN {format}{text}"), q.table_prefix());
            let mut query = sqlx::query(sql).bind("x").bind(claim_priority);
            if name == "after" {
                query = query
                    .bind(last.run_at)
                    .bind(last.id.0)
                    .bind(claim_priority)
                    .bind(last.run_at)
                    .bind(claim_priority);
            }
            if name != "any" {
                query = query.bind(true).bind("x").bind(100_u64);
            }
            query
        };
        let row = explain("").fetch_one(q.pool()).await?;
        let access: Option<String> = row.try_get_unchecked("type")?;
        let key: Option<String> = row.try_get_unchecked("key")?;
        let extra: Option<String> = row.try_get_unchecked("Extra")?;
        ensure!(
            access.as_deref() == Some("range") && key.as_deref() == Some("claim"),
            "{name}: {access:?} on {key:?}"
        );
        ensure!(
            !extra.unwrap_or_default().contains("filesort"),
            "{name}: the claim must not sort"
        );
        let plan: String = explain("FORMAT=JSON ")
            .fetch_one(q.pool())
            .await?
            .try_get_unchecked(0)?;
        // The plan names the index's parts its range is bounded on. (MariaDB's JSON keeps the
        // conditions' text unescaped, so it is read as text.)
        let used = used_key_parts(&plan);
        ensure!(
            used == Some(parts),
            "{name}: range on {used:?} parts: {plan}"
        );
    }
    q.drop_tables().await?;
    Ok(())
}

/// The length of the first `"used_key_parts"` list of a JSON plan.
fn used_key_parts(plan: &str) -> Option<usize> {
    let list = plan.split_once("\"used_key_parts\"")?.1;
    let list = list.split_once('[')?.1.split_once(']')?.0;
    Some(
        list.split(',')
            .filter(|part| !part.trim().is_empty())
            .count(),
    )
}

/// An extension that waits for another transaction's lock on the job's row gets its full
/// lease, counted from when it got the lock.
async fn an_extension_that_waits_for_a_row_lock_gets_its_full_lease(
    server: Server,
) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    q.push(job("ext", 1)).await?;
    let leased = q
        .pop(PopRequest::new("ext").lease(Duration::from_secs(1)))
        .await?;
    ensure!(leased.len() == 1);
    let lease = leased[0].lease.clone();
    let mut holder = q.pool().begin().await?;
    sqlx::query(in_prefix(
        "SELECT 1 FROM {prefix}jobs WHERE id = ? FOR UPDATE",
        q.table_prefix(),
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
    let left = extended.expires_at - q.now().await?;
    ensure!(
        // A lease measured from before the lock wait would have about 6 s.
        left.num_milliseconds() > 8_500,
        "the extended 10 s lease has {} ms left",
        left.num_milliseconds()
    );
    q.drop_tables().await?;
    Ok(())
}

/// `url` with its user and password replaced.
fn as_user(url: &str, user: &str, password: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
    let at = rest.find('/').unwrap_or(rest.len());
    let host = rest[..at].rfind('@').map_or(0, |i| i + 1);
    format!("{scheme}://{user}:{password}@{}", &rest[host..])
}

/// Runs `template` with `{user}` replaced by the account `'name'@'%'`, quoted by the server
/// (`QUOTE`), and `{password}` likewise.
async fn account_ddl(
    admin: &MySqlQueue,
    template: &str,
    name: &str,
    password: &str,
) -> anyhow::Result<()> {
    let quoted: (String, String) = sqlx::query_as("SELECT QUOTE(?), QUOTE(?)")
        .bind(name)
        .bind(password)
        .fetch_one(admin.pool())
        .await?;
    let ddl = template
        .replace("{user}", &format!("{}@'%'", quoted.0))
        .replace("{password}", &quoted.1);
    sqlx::raw_sql(AssertSqlSafe(ddl))
        .execute(admin.pool())
        .await?;
    Ok(())
}

/// A server switched to read-only (`SET GLOBAL read_only = 1`: a replica, or a primary demoted
/// in place) answers writes with error 1290: an outage, not a job error. Pushes, acks and
/// failures return `Unavailable` and change nothing; once it takes writes again the very next
/// call succeeds, on a fresh connection (the read-only era's connections were retired).
/// The account has no privilege to write past `read_only`, as an application's should not.
async fn a_read_only_server_is_unavailable_until_it_takes_writes_again(
    server: Server,
) -> anyhow::Result<()> {
    let admin = fresh(&server, |b| b).await?;
    let name = format!("qro_{}", &random_suffix()[..8]);
    let password = random_suffix();
    account_ddl(
        &admin,
        "CREATE USER {user} IDENTIFIED BY {password}",
        &name,
        &password,
    )
    .await?;
    account_ddl(
        &admin,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON *.* TO {user}",
        &name,
        &password,
    )
    .await?;
    let outcome = async {
        let q = builder(
            &as_user(&server.url, &name, &password),
            admin.table_prefix(),
        )
        .max_connections(1)
        .connect()
        .await?;
        q.push(job("ro", 1)).await?;
        q.push(job("ro", 2)).await?;
        let leased = q.pop(PopRequest::new("ro").limit(2)).await?;
        ensure!(leased.len() == 2);
        let before: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
            .fetch_one(q.pool())
            .await?;
        sqlx::query("SET GLOBAL read_only = 1")
            .execute(admin.pool())
            .await?;
        let read_only = async {
            for n in 0..3 {
                match q.push(job("ro", 10 + n)).await {
                    Err(e) if e.is_transient() => {}
                    other => bail!("a push to a read-only server: {other:?}"),
                }
            }
            match q.ack(&leased[0].lease).await {
                Err(e) if e.is_transient() => {}
                other => bail!("an ack on a read-only server: {other:?}"),
            }
            match q
                .fail(&leased[1].lease, queue_core::Failure::retryable("boom"))
                .await
            {
                Err(e) if e.is_transient() => {}
                other => bail!("a failure on a read-only server: {other:?}"),
            }
            // A host list asks for a read-write server: none of these fits now, and the error
            // says why for each host.
            match builder(&dead_host_first(&server.url), admin.table_prefix())
                .connect_timeout(Duration::from_secs(2))
                .connect()
                .await
            {
                Err(e @ Error::Unavailable { .. })
                    if e.to_string().contains("127.0.0.1:1")
                        && e.to_string().contains("read-only") => {}
                other => bail!("a host list of a dead and a read-only server: {other:?}"),
            }
            Ok(())
        }
        .await;
        sqlx::query("SET GLOBAL read_only = 0")
            .execute(admin.pool())
            .await?;
        read_only?;
        ensure!(
            count(&admin, "1 = 1").await? == 2,
            "nothing pushed while read-only"
        );
        ensure!(count(&admin, "state = 'running' AND attempts = 1").await? == 2);
        q.ack(&leased[0].lease).await?;
        q.fail(&leased[1].lease, queue_core::Failure::retryable("boom"))
            .await?;
        q.push(job("ro", 3)).await?;
        ensure!(count(&admin, "state = 'completed'").await? == 1);
        ensure!(count(&admin, "state = 'pending'").await? == 2);
        let after: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
            .fetch_one(q.pool())
            .await?;
        ensure!(
            after != before,
            "the read-only era's connection was retired"
        );
        q.pool().close().await;
        // Writes are back: the same host list lands on the server.
        let listed = builder(&dead_host_first(&server.url), admin.table_prefix())
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await?;
        listed.push(job("ro", 4)).await?;
        ensure!(count(&admin, "state = 'pending'").await? == 3);
        listed.pool().close().await;
        Ok(())
    }
    .await;
    let _ = sqlx::query("SET GLOBAL read_only = 0")
        .execute(admin.pool())
        .await;
    let dropped = account_ddl(&admin, "DROP USER {user}", &name, &password).await;
    admin.drop_tables().await?;
    outcome.and(dropped)
}

/// `url` with a host that answers nothing (`127.0.0.1:1`) put first in a host list.
fn dead_host_first(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    match rest.rfind('@') {
        Some(at) => format!("{scheme}://{}@127.0.0.1:1,{}", &rest[..at], &rest[at + 1..]),
        None => format!("{scheme}://127.0.0.1:1,{rest}"),
    }
}

/// A host list is walked in order: a host that refuses connections is skipped, the queue works
/// on the next, and a list in which no host answers fails with an error naming each host.
async fn a_host_list_skips_servers_that_do_not_answer(server: Server) -> anyhow::Result<()> {
    let prefix = format!("t{}_", random_suffix());
    let q = builder(&dead_host_first(&server.url), &prefix)
        .connect()
        .await?;
    q.migrate().await?;
    let id = q.push(job("hl", 1)).await?;
    let leased = q.pop(PopRequest::new("hl")).await?;
    ensure!(leased.len() == 1 && leased[0].job.id == id, "{leased:?}");
    q.ack(&leased[0].lease).await?;
    ensure!(count(&q, "state = 'completed'").await? == 1);
    q.drop_tables().await?;
    let unreachable = MySqlQueue::builder("mysql://root:hunter2@127.0.0.1:1,127.0.0.1:2/test")
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await;
    match unreachable {
        Err(e @ Error::Unavailable { .. }) => {
            let shown = e.to_string();
            ensure!(
                shown.contains("127.0.0.1:1") && shown.contains("127.0.0.1:2"),
                "{shown}"
            );
            ensure!(!shown.contains("hunter2"), "{shown}");
        }
        other => bail!("a host list of two closed ports: {other:?}"),
    }
    let e = MySqlQueue::builder("mysql://h1,h2/test?target_session_attrs=standby")
        .connect()
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("target_session_attrs=standby was accepted"))?;
    ensure!(
        matches!(&e, Error::InvalidInput { field, .. } if field == "url"),
        "{e:?}"
    );
    Ok(())
}

/// Without GET_LOCK (the distributed profile, as on TiDB and Vitess) migrations serialize on a
/// leased lock row: a row left by a migrator that died holds the next one up until its lease
/// runs out, and is then taken over; the row is gone afterwards and no migration is counted
/// twice.
async fn a_dead_migrators_lock_row_is_taken_over_after_its_lease(
    server: Server,
) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b.profile(queue_core::Profile::Distributed)).await?;
    ensure!(!q.capabilities().profile.advisory_locks);
    let prefix = q.table_prefix().to_owned();
    // Before the insert: its lease runs 1.5 s from the server's time of the insert, however
    // late the answer comes back.
    let started = std::time::Instant::now();
    sqlx::query(in_prefix(
        "INSERT INTO {prefix}migrations (version, name, applied_at) \
         VALUES (0, ?, DATE_ADD(UTC_TIMESTAMP(6), INTERVAL ? MICROSECOND))",
        &prefix,
    ))
    .bind("a migrator that died")
    .bind(1_500_000_i64)
    .execute(q.pool())
    .await?;
    let again = builder(&server.url, &prefix)
        .profile(queue_core::Profile::Distributed)
        .connect()
        .await?;
    again.migrate().await?;
    let waited = started.elapsed();
    ensure!(
        waited >= Duration::from_millis(1_400),
        "migrated after {waited:?}, inside the dead migrator's lease"
    );
    let rows: Vec<(i64, String)> = sqlx::query_as(in_prefix(
        "SELECT version, name FROM {prefix}migrations ORDER BY version",
        &prefix,
    ))
    .fetch_all(q.pool())
    .await?;
    ensure!(
        rows.first().is_some_and(|r| r.0 == 1) && rows.windows(2).all(|w| w[0].0 < w[1].0),
        "the migrations table holds {rows:?}"
    );
    q.drop_tables().await?;
    Ok(())
}

/// The error history keeps exactly the newest entries at any bound, through every statement
/// that appends one (see `conformance_tests::statements`).
async fn the_error_history_keeps_the_newest_entries(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    conformance_tests::statements::error_history_keeps_the_newest(&q).await?;
    q.drop_tables().await?;
    Ok(())
}

/// `drop_tables` drops every table the migrations made, leaving none of its prefix behind.
async fn drop_tables_leaves_no_table_of_its_prefix(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let prefix = q.table_prefix().to_owned();
    let tables = || async {
        sqlx::query_scalar::<_, String>(
            "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND LEFT(table_name, CHAR_LENGTH(?)) = ?",
        )
        .bind(&prefix)
        .bind(&prefix)
        .fetch_all(q.pool())
        .await
    };
    let made = tables().await?;
    ensure!(made.len() >= 9, "the migrations made {made:?}");
    q.drop_tables().await?;
    let left = tables().await?;
    ensure!(left.is_empty(), "left after drop_tables: {left:?}");
    Ok(())
}

/// Migrations that add columns and indexes, or drop an index, and ran without their records (a
/// crash between the DDL, which commits by itself, and the record) run again and are recorded,
/// the table unchanged.
async fn a_migration_applied_but_not_recorded_runs_again(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let prefix = q.table_prefix().to_owned();
    let id = q.push(job("rerun", 1).kind("k")).await?;
    let last: i64 = sqlx::query_scalar(in_prefix(
        "SELECT MAX(version) FROM {prefix}migrations",
        &prefix,
    ))
    .fetch_one(q.pool())
    .await?;
    // Job kinds (5), unique jobs (6), maintenance (7) and every later one: columns, a virtual
    // column, an index, a table, and the finished index (13), whose `finished` is dropped
    // again (its "can't drop" taken as applied).
    sqlx::query(in_prefix(
        "DELETE FROM {prefix}migrations WHERE version >= ?",
        &prefix,
    ))
    .bind(5)
    .execute(q.pool())
    .await?;
    let again = builder(&server.url, &prefix).connect().await?;
    again.migrate().await?;
    let versions: Vec<i64> = sqlx::query_scalar(in_prefix(
        "SELECT version FROM {prefix}migrations WHERE version > 0 ORDER BY version",
        &prefix,
    ))
    .fetch_all(q.pool())
    .await?;
    ensure!(
        versions == (1..=last).collect::<Vec<_>>(),
        "recorded {versions:?}"
    );
    let read = again.get(id).await?.context("the job")?;
    ensure!(read.kind.as_deref() == Some("k"), "{read:?}");
    // The unique index came through the rerun (its "duplicate key name" taken as applied).
    let rule = queue_core::Unique::new().by_args();
    let first = again
        .push_outcome(job("rerun", 2).kind("k").unique(rule.clone()))
        .await?;
    let second = again
        .push_outcome(job("rerun", 2).kind("k").unique(rule))
        .await?;
    ensure!(
        first.inserted() && second == queue_core::PushOutcome::Existing(first.id()),
        "{first:?} then {second:?}"
    );
    q.drop_tables().await?;
    Ok(())
}

/// Unique keys compare byte for byte: keys that differ only in trailing spaces are different
/// keys (a PAD SPACE collation, MariaDB's default, would take them as equal), and a key held
/// twice is refused by the index.
async fn unique_keys_compare_byte_for_byte(server: Server) -> anyhow::Result<()> {
    let q = fresh(&server, |b| b).await?;
    let insert = |key: &'static [u8]| {
        let sql = in_prefix(
            "INSERT INTO {prefix}jobs (id, queue, payload, priority, state, attempts, \
             max_attempts, run_at, version, created_at, updated_at, unique_key, unique_states) \
             VALUES (?, 'pad', '{}', 0, 'pending', 0, 1, UTC_TIMESTAMP(6), 0, \
             UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), ?, 1)",
            q.table_prefix(),
        );
        let pool = q.pool().clone();
        async move {
            sqlx::query(sql)
                .bind(queue_core::JobId::new().0)
                .bind(key)
                .execute(&pool)
                .await
        }
    };
    insert(b"k").await?;
    insert(b"k ").await?;
    insert(b"k\0").await?;
    let again = insert(b"k").await;
    ensure!(
        matches!(&again, Err(sqlx::Error::Database(e)) if e.is_unique_violation()),
        "a key held twice: {again:?}"
    );
    ensure!(count(&q, "unique_live IS NOT NULL").await? == 3);
    q.drop_tables().await?;
    Ok(())
}

/// The claim strategies the forced profile (`QUEUE_TEST_PROFILE`) has: all of them, or only the
/// optimistic claim where it lacks SKIP LOCKED (TiDB, Vitess, the distributed profile).
fn claims() -> &'static [ClaimStrategy] {
    match conformance_tests::test_profile() {
        Some(p) if !p.settle(queue_core::ServerKind::MariaDb).skip_locked => {
            &[ClaimStrategy::Optimistic]
        }
        _ => Backend::CLAIMS,
    }
}

fn main() -> std::process::ExitCode {
    conformance_tests::main_with::<Backend>(
        claims(),
        conformance_tests::dialect_tests![
            the_error_history_keeps_the_newest_entries,
            drop_tables_leaves_no_table_of_its_prefix,
            a_migration_applied_but_not_recorded_runs_again,
            unique_keys_compare_byte_for_byte,
            capabilities_and_detection,
            bad_settings_and_unreachable_servers,
            push_batch_is_chunked_and_atomic,
            the_claim_reads_the_claim_index,
            a_claim_from_a_position_reads_ranges_of_the_claim_index,
            an_extension_that_waits_for_a_row_lock_gets_its_full_lease,
            a_read_only_server_is_unavailable_until_it_takes_writes_again,
            a_dead_migrators_lock_row_is_taken_over_after_its_lease,
            a_host_list_skips_servers_that_do_not_answer,
            a_killed_connection_is_unavailable_once_then_replaced,
        ],
    )
}
