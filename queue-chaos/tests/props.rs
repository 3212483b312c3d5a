//! Property tests over the inputs of the public API, on every backend: queue names, payloads,
//! dedup keys, priorities, delays, attempts, batches, pop requests, leases, failure messages and
//! URLs. Each input is either accepted and read back exactly, or refused with `InvalidInput`
//! naming its field; never a panic, never a partial write (the rows of the queue are counted
//! before and after every refused call).
//!
//! SQLite always runs. PostgreSQL and MySQL/MariaDB run when `QUEUE_TEST_POSTGRES_URL` and
//! `QUEUE_TEST_MYSQL_URL` are set at build time, and show as ignored otherwise; when
//! `QUEUE_TEST_REQUIRE` names them, a missing URL fails. `PROPTEST_CASES` sets the cases per
//! property (default 32).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use dbqueue::validate::{MAX_DELAY, MAX_ERROR_CHARS};
use dbqueue::{
    Error, FailOutcome, Failure, JobId, JobState, Limits, MySqlQueue, NewJob, Options, PopRequest,
    Queue,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};
use sqlx::Connection;

// ---------------------------------------------------------------------------------------------
// Fixtures

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
    Mysql,
}

/// A fresh, isolated queue: its own SQLite file, PostgreSQL schema or MySQL table prefix.
struct Fixture {
    queue: Arc<dyn Queue>,
    cleanup: Cleanup,
}

enum Cleanup {
    /// Holds the directory of the database file until the fixture closes.
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres {
        url: String,
        schema: String,
    },
    Mysql(MySqlQueue),
}

fn url_of(backend: Backend) -> Option<String> {
    let var = match backend {
        Backend::Sqlite => return Some(String::new()),
        Backend::Postgres => "QUEUE_TEST_POSTGRES_URL",
        Backend::Mysql => "QUEUE_TEST_MYSQL_URL",
    };
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

fn name_part() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

impl Fixture {
    async fn open(backend: Backend, limits: Limits) -> Result<Fixture, Error> {
        let url = url_of(backend).unwrap_or_else(|| {
            panic!(
                "{backend:?} is required by QUEUE_TEST_REQUIRE but its QUEUE_TEST_*_URL is not set"
            )
        });
        let options = Options {
            limits: limits.clone(),
            connect_timeout: Some(Duration::from_secs(10)),
            ..Options::default()
        };
        let (queue, cleanup): (Arc<dyn Queue>, Cleanup) = match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let url = format!("sqlite://{}", dir.path().join("props.db").display());
                (
                    dbqueue::connect_with(&url, options).await?,
                    Cleanup::Sqlite(dir),
                )
            }
            Backend::Postgres => {
                let schema = format!("chaos_props_{}", name_part());
                let q = dbqueue::connect_with(
                    &url,
                    Options {
                        schema: Some(schema.clone()),
                        ..options
                    },
                )
                .await?;
                (q, Cleanup::Postgres { url, schema })
            }
            Backend::Mysql => {
                let prefix = format!("chaos_props_{}_", name_part());
                let q = MySqlQueue::builder(url)
                    .table_prefix(prefix)
                    .limits(limits)
                    .connect()
                    .await?;
                (Arc::new(q.clone()) as Arc<dyn Queue>, Cleanup::Mysql(q))
            }
        };
        queue.migrate().await?;
        Ok(Fixture { queue, cleanup })
    }

    async fn close(self) {
        match self.cleanup {
            Cleanup::Sqlite(_) => {}
            Cleanup::Postgres { url, schema } => {
                dbqueue::validate::identifier("schema", &schema).expect("a plain schema name");
                // The schema name is a checked identifier; it cannot be a bound value.
                let drop: &'static str =
                    Box::leak(format!("DROP SCHEMA IF EXISTS {schema} CASCADE").into_boxed_str());
                if let Ok(mut c) = sqlx::PgConnection::connect(&url).await {
                    let _ = sqlx::query(drop).execute(&mut c).await;
                }
            }
            Cleanup::Mysql(q) => {
                let _ = q.drop_tables().await;
            }
        }
    }

    /// Every row of every queue, whatever its state.
    async fn rows(&self) -> u64 {
        let stats = self.queue.stats(None).await.expect("stats");
        stats
            .iter()
            .map(|s| JobState::ALL.iter().map(|st| s.count(*st)).sum::<u64>())
            .sum()
    }
}

/// Runs `property` on `backend` for every input `strategy` generates.
fn check<S, F, Fut>(backend: Backend, limits: Limits, strategy: S, property: F)
where
    S: Strategy,
    S::Value: Clone + std::fmt::Debug,
    F: Fn(Arc<Fixture>, S::Value) -> Fut,
    Fut: Future<Output = Result<(), TestCaseError>>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let fixture = Arc::new(
        rt.block_on(Fixture::open(backend, limits))
            .unwrap_or_else(|e| panic!("opening {backend:?}: {e}")),
    );
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |input| {
        rt.block_on(property(fixture.clone(), input))
    });
    if let Ok(f) = Arc::try_unwrap(fixture) {
        rt.block_on(f.close());
    }
    if let Err(e) = result {
        panic!("{backend:?}: {e}");
    }
}

/// The field of an `InvalidInput`, or a test failure naming what came back instead.
fn refused_field<T: std::fmt::Debug>(r: dbqueue::Result<T>) -> Result<String, TestCaseError> {
    match r {
        Err(Error::InvalidInput { field, .. }) => Ok(field),
        other => Err(TestCaseError::fail(format!(
            "expected InvalidInput, got {other:?}"
        ))),
    }
}

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(TestCaseError::fail(format!($($msg)+)));
        }
    };
}

/// Expands a property into one test per backend.
macro_rules! on_every_backend {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn sqlite() {
                ($body)(Backend::Sqlite)
            }

            #[test]
            #[cfg_attr(not(chaos_postgres), ignore = "QUEUE_TEST_POSTGRES_URL is not set")]
            fn postgres() {
                ($body)(Backend::Postgres)
            }

            #[test]
            #[cfg_attr(not(chaos_mysql), ignore = "QUEUE_TEST_MYSQL_URL is not set")]
            fn mysql() {
                ($body)(Backend::Mysql)
            }
        }
    };
}

/// Pushes `job`; when it is refused, checks that nothing was stored and returns the field.
async fn push_or_field(f: &Fixture, job: NewJob) -> Result<Result<JobId, String>, TestCaseError> {
    let before = f.rows().await;
    match f.queue.push(job).await {
        Ok(id) => Ok(Ok(id)),
        other => {
            let field = refused_field(other)?;
            let after = f.rows().await;
            ensure!(
                before == after,
                "a refused push changed the row count {before} -> {after}"
            );
            Ok(Err(field))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Strategies

/// Strings that mix the characters that break SQL and JSON handling with any others.
fn hostile_string(max: usize) -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("`".to_owned()),
        Just(";".to_owned()),
        Just("--".to_owned()),
        Just("/*".to_owned()),
        Just("%".to_owned()),
        Just("_".to_owned()),
        Just("?".to_owned()),
        Just("$1".to_owned()),
        Just("' OR '1'='1".to_owned()),
        Just("'); DROP TABLE jobs; --".to_owned()),
        Just("\u{1F600}".to_owned()),
        Just("\0".to_owned()),
        Just("é".to_owned()),
        Just("\u{200B}".to_owned()),
        "[\\x01-\\x1f]",
        "\\PC{1,8}",
        "[a-z]{1,8}",
    ];
    proptest::collection::vec(pieces, 0..max).prop_map(|v| v.concat())
}

/// JSON values, NUL and every other character included in strings, with numbers that every
/// database stores exactly.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1_000_000i32..1_000_000).prop_map(|n| json!(f64::from(n) / 8.0)),
        hostile_string(6).prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(hostile_string(3), inner, 0..6)
                .prop_map(|m: BTreeMap<String, Value>| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The rule for queue names, written out independently of the library's check.
fn queue_name_is_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

fn queue_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_.:-]{1,128}",
        "[A-Za-z0-9_.:-]{129,140}",
        Just(String::new()),
        hostile_string(8),
        "\\PC{0,20}",
    ]
}

// ---------------------------------------------------------------------------------------------
// Properties

on_every_backend!(queue_names, |b| check(
    b,
    Limits::default(),
    queue_name(),
    |f, name: String| async move {
        let job = NewJob::new(name.clone(), &json!({"n": 1})).expect("a payload");
        match push_or_field(&f, job).await? {
            Ok(id) => {
                ensure!(
                    queue_name_is_valid(&name),
                    "accepted the invalid queue name {name:?}"
                );
                let got = f.queue.get(id).await.expect("get").expect("the job");
                ensure!(
                    got.queue == name,
                    "queue {name:?} came back as {:?}",
                    got.queue
                );
            }
            Err(field) => {
                ensure!(
                    !queue_name_is_valid(&name),
                    "refused the valid queue name {name:?}"
                );
                ensure!(field == "queue", "refusal named {field:?}, not queue");
            }
        }
        // A pop names the same field for the same rule.
        match f.queue.pop(PopRequest::new(name.clone())).await {
            Ok(_) => ensure!(queue_name_is_valid(&name), "pop accepted {name:?}"),
            Err(e) => ensure!(
                matches!(&e, Error::InvalidInput { field, .. } if field == "queue"),
                "pop of {name:?} failed with {e:?}"
            ),
        }
        Ok(())
    }
));

on_every_backend!(payloads_round_trip, |b| check(
    b,
    Limits::default(),
    json_value(),
    |f, value: Value| async move {
        let q = format!("p{}", name_part());
        let id = f
            .queue
            .push(NewJob::new(q.clone(), &value).expect("serializable"))
            .await
            .map_err(|e| TestCaseError::fail(format!("push of {value} failed: {e}")))?;
        let got = f.queue.get(id).await.expect("get").expect("the job");
        ensure!(
            got.payload_value() == value,
            "payload {value} came back as {}",
            got.payload.get()
        );
        let popped = f.queue.pop(PopRequest::new(q)).await.expect("pop");
        ensure!(popped.len() == 1, "popped {} jobs", popped.len());
        ensure!(
            popped[0].job.payload_value() == value,
            "popped payload differs from {value}"
        );
        Ok(())
    }
));

on_every_backend!(json_text_is_checked_before_anything_is_stored, |b| check(
    b,
    Limits::default(),
    prop_oneof![
        "\\PC{0,12}",
        hostile_string(6),
        json_value().prop_map(|v| v.to_string())
    ],
    |f, text: String| async move {
        match NewJob::from_json("raw", &text) {
            Ok(job) => {
                let parsed: Value = serde_json::from_str(&text)
                    .map_err(|e| TestCaseError::fail(format!("accepted non-JSON {text:?}: {e}")))?;
                let id = f
                    .queue
                    .push(job)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
                let got = f.queue.get(id).await.expect("get").expect("the job");
                ensure!(
                    got.payload_value() == parsed,
                    "{text:?} came back as {}",
                    got.payload.get()
                );
            }
            Err(e) => {
                ensure!(
                    serde_json::from_str::<Value>(&text).is_err(),
                    "refused valid JSON {text:?}: {e}"
                );
                ensure!(
                    matches!(&e, Error::InvalidInput { field, .. } if field == "payload"),
                    "refusal of {text:?} was {e:?}"
                );
            }
        }
        Ok(())
    }
));

/// The rule for dedup keys, written out: 1..=255 characters, no NUL.
fn dedup_key_is_valid(key: &str) -> bool {
    !key.is_empty() && !key.contains('\0') && key.chars().count() <= 255
}

on_every_backend!(dedup_keys, |b| check(
    b,
    Limits::default(),
    prop_oneof![hostile_string(12), "\\PC{250,260}", Just(String::new())],
    |f, key: String| async move {
        let q = format!("d{}", name_part());
        let job = || {
            NewJob::new(q.clone(), &json!({}))
                .expect("a payload")
                .dedup_key(key.clone())
        };
        match push_or_field(&f, job()).await? {
            Ok(id) => {
                ensure!(dedup_key_is_valid(&key), "accepted the invalid key {key:?}");
                let got = f.queue.get(id).await.expect("get").expect("the job");
                ensure!(
                    got.dedup_key.as_deref() == Some(key.as_str()),
                    "key {key:?} came back as {:?}",
                    got.dedup_key
                );
                let before = f.rows().await;
                match f.queue.push(job()).await {
                    Err(Error::Duplicate { queue, dedup_key }) => {
                        ensure!(
                            queue == q && dedup_key == key,
                            "duplicate named {queue:?} {dedup_key:?}"
                        );
                    }
                    other => {
                        return Err(TestCaseError::fail(format!(
                            "second push of {key:?}: {other:?}"
                        )))
                    }
                }
                ensure!(
                    f.rows().await == before,
                    "a refused duplicate changed the row count"
                );
            }
            Err(field) => {
                ensure!(!dedup_key_is_valid(&key), "refused the valid key {key:?}");
                ensure!(field == "dedup_key", "refusal named {field:?}");
            }
        }
        Ok(())
    }
));

/// Pairs of keys that differ in bytes (not in trailing spaces: their rule is tested apart).
fn distinct_key_pair() -> impl Strategy<Value = (String, String)> {
    ("[a-z]{1,10}", 0..5u8).prop_map(|(k, how)| {
        let other = match how {
            0 => k.to_uppercase(),
            1 => format!("{k}a"),
            2 => format!(" {k}"),
            3 => format!("{k}\u{e9}"),
            _ => format!("{k}e\u{301}"),
        };
        let k = if how >= 3 { format!("{k}e") } else { k };
        (k, other)
    })
}

/// Pushes two jobs with `a` and `b` as keys; both must be stored, with their keys as given.
async fn keys_stay_apart(f: &Fixture, a: &str, b: &str) -> Result<(), TestCaseError> {
    let q = format!("k{}", name_part());
    for key in [a, b] {
        let id = f
            .queue
            .push(
                NewJob::new(q.clone(), &json!({}))
                    .expect("a payload")
                    .dedup_key(key),
            )
            .await
            .map_err(|e| {
                TestCaseError::fail(format!("keys {a:?} and {b:?}: push of {key:?}: {e}"))
            })?;
        let got = f.queue.get(id).await.expect("get").expect("the job");
        ensure!(
            got.dedup_key.as_deref() == Some(key),
            "key {key:?} came back as {:?}",
            got.dedup_key
        );
    }
    Ok(())
}

on_every_backend!(distinct_dedup_keys_stay_distinct, |b| check(
    b,
    Limits::default(),
    distinct_key_pair(),
    |f, (a, b): (String, String)| async move { keys_stay_apart(&f, &a, &b).await }
));

on_every_backend!(priorities_round_trip_and_order_claims, |b| check(
    b,
    Limits::default(),
    proptest::collection::vec(any::<i32>(), 1..8),
    |f, priorities: Vec<i32>| async move {
        let q = format!("r{}", name_part());
        for p in &priorities {
            let id = f
                .queue
                .push(
                    NewJob::new(q.clone(), &json!({}))
                        .expect("a payload")
                        .priority(*p),
                )
                .await
                .map_err(|e| TestCaseError::fail(format!("priority {p}: {e}")))?;
            let got = f.queue.get(id).await.expect("get").expect("the job");
            ensure!(
                got.priority == *p,
                "priority {p} came back as {}",
                got.priority
            );
        }
        let mut last = i32::MAX;
        for _ in &priorities {
            let got = f.queue.pop(PopRequest::new(q.clone())).await.expect("pop");
            ensure!(got.len() == 1, "a pop found {} jobs", got.len());
            let p = got[0].job.priority;
            ensure!(p <= last, "claimed priority {p} after {last}");
            last = p;
        }
        Ok(())
    }
));

on_every_backend!(max_attempts, |b| check(
    b,
    Limits::default(),
    prop_oneof![Just(0u32), 1..=10_000u32, 10_001..=u32::MAX],
    |f, n: u32| async move {
        let job = NewJob::new("attempts", &json!({}))
            .expect("a payload")
            .max_attempts(n);
        match push_or_field(&f, job).await? {
            Ok(id) => {
                ensure!((1..=10_000).contains(&n), "accepted max_attempts {n}");
                let got = f.queue.get(id).await.expect("get").expect("the job");
                ensure!(
                    got.max_attempts == n,
                    "max_attempts {n} came back as {}",
                    got.max_attempts
                );
            }
            Err(field) => {
                ensure!(!(1..=10_000).contains(&n), "refused max_attempts {n}");
                ensure!(field == "max_attempts", "refusal named {field:?}");
            }
        }
        Ok(())
    }
));

on_every_backend!(delays, |b| check(
    b,
    Limits::default(),
    prop_oneof![
        0..=3_600_000u64,
        (MAX_DELAY.as_millis() as u64 - 1000)..=(MAX_DELAY.as_millis() as u64 + 1000),
        any::<u64>()
    ],
    |f, ms: u64| async move {
        let delay = Duration::from_millis(ms);
        let job = NewJob::new("delays", &json!({}))
            .expect("a payload")
            .delay(delay);
        match push_or_field(&f, job).await? {
            Ok(id) => {
                ensure!(delay <= MAX_DELAY, "accepted a delay of {delay:?}");
                let got = f.queue.get(id).await.expect("get").expect("the job");
                let due = (got.run_at - got.created_at).to_std().unwrap_or_default();
                let off = due.abs_diff(delay);
                ensure!(
                    off < Duration::from_secs(2),
                    "a delay of {delay:?} became {due:?}"
                );
            }
            Err(field) => {
                ensure!(delay > MAX_DELAY, "refused a delay of {delay:?}");
                ensure!(field == "delay", "refusal named {field:?}");
            }
        }
        Ok(())
    }
));

on_every_backend!(batches_store_all_or_nothing, |b| check(
    b,
    Limits {
        max_batch: 12,
        ..Limits::default()
    },
    (0..16usize, proptest::option::of((0..16usize, 0..3u8))),
    |f, (len, bad): (usize, Option<(usize, u8)>)| async move {
        let q = format!("b{}", name_part());
        let mut jobs: Vec<NewJob> = (0..len)
            .map(|i| NewJob::new(q.clone(), &json!({ "i": i })).expect("a payload"))
            .collect();
        let mut expect_field = None;
        if let Some((at, how)) = bad {
            if at < len {
                let (job, field) = match how {
                    0 => (
                        NewJob::new("bad name", &json!({})).expect("a payload"),
                        "queue",
                    ),
                    1 => (
                        NewJob::new(q.clone(), &json!({}))
                            .expect("a payload")
                            .max_attempts(0),
                        "max_attempts",
                    ),
                    _ => (
                        NewJob::new(q.clone(), &json!({}))
                            .expect("a payload")
                            .delay(MAX_DELAY * 2),
                        "delay",
                    ),
                };
                jobs[at] = job;
                expect_field = Some(format!("jobs[{at}].{field}"));
            }
        }
        if len > 12 {
            expect_field = Some("jobs".to_owned());
        }
        let ids: Vec<JobId> = jobs.iter().map(NewJob::id).collect();
        let before = f.rows().await;
        match f.queue.push_batch(jobs).await {
            Ok(got) => {
                ensure!(
                    expect_field.is_none(),
                    "accepted a batch that breaks {expect_field:?}"
                );
                ensure!(got == ids, "ids came back out of order");
                ensure!(
                    f.rows().await == before + len as u64,
                    "not every job was stored"
                );
            }
            other => {
                let field = refused_field(other)?;
                ensure!(
                    expect_field.as_deref() == Some(field.as_str()),
                    "refusal named {field:?}, expected {expect_field:?}"
                );
                ensure!(f.rows().await == before, "a refused batch stored rows");
            }
        }
        Ok(())
    }
));

on_every_backend!(pop_requests, |b| check(
    b,
    Limits::default(),
    (
        prop_oneof![Just(0usize), 1..=1000usize, 1001..5000usize],
        prop_oneof![0..20u64, 10..=86_400_000u64, 86_400_001..100_000_000u64],
        prop_oneof![hostile_string(10), "\\PC{120,140}"],
    ),
    |f, (limit, lease_ms, worker): (usize, u64, String)| async move {
        let q = format!("o{}", name_part());
        f.queue
            .push(NewJob::new(q.clone(), &json!({})).expect("a payload"))
            .await
            .expect("push");
        let lease = Duration::from_millis(lease_ms);
        let expect = if limit == 0 || limit > 1000 {
            Some("limit")
        } else if !(Duration::from_millis(10)..=Duration::from_secs(86_400)).contains(&lease) {
            Some("lease")
        } else if worker.is_empty() || worker.contains('\0') || worker.chars().count() > 128 {
            Some("worker")
        } else {
            None
        };
        let req = PopRequest::new(q.clone())
            .limit(limit)
            .lease(lease)
            .worker(worker.clone());
        let before = f.queue.stats(Some(&q)).await.expect("stats");
        match f.queue.pop(req).await {
            Ok(got) => {
                ensure!(expect.is_none(), "accepted a pop that breaks {expect:?}");
                ensure!(got.len() == 1, "claimed {} of 1", got.len());
                let row = f
                    .queue
                    .get(got[0].job.id)
                    .await
                    .expect("get")
                    .expect("the job");
                ensure!(
                    row.worker.as_deref() == Some(worker.as_str()),
                    "worker {worker:?} came back as {:?}",
                    row.worker
                );
            }
            other => {
                let field = refused_field(other)?;
                ensure!(
                    expect == Some(field.as_str()),
                    "refusal named {field:?}, expected {expect:?}"
                );
                ensure!(
                    f.queue.stats(Some(&q)).await.expect("stats") == before,
                    "a refused pop changed the queue"
                );
            }
        }
        Ok(())
    }
));

on_every_backend!(extensions, |b| check(
    b,
    Limits::default(),
    prop_oneof![0..20u64, 10..=86_400_000u64, 86_400_001..100_000_000u64],
    |f, ms: u64| async move {
        let q = format!("x{}", name_part());
        f.queue
            .push(NewJob::new(q.clone(), &json!({})).expect("a payload"))
            .await
            .expect("push");
        let leased = f
            .queue
            .pop(PopRequest::new(q.clone()))
            .await
            .expect("pop")
            .remove(0);
        let by = Duration::from_millis(ms);
        let valid = (Duration::from_millis(10)..=Duration::from_secs(86_400)).contains(&by);
        let before = f
            .queue
            .get(leased.job.id)
            .await
            .expect("get")
            .expect("the job")
            .lease_expires_at;
        match f.queue.extend(&leased.lease, by).await {
            Ok(l) => {
                ensure!(valid, "accepted an extension by {by:?}");
                ensure!(
                    l.token == leased.lease.token,
                    "the extension changed the token"
                );
            }
            other => {
                let field = refused_field(other)?;
                ensure!(!valid, "refused an extension by {by:?}");
                ensure!(field == "by", "refusal named {field:?}");
                let after = f
                    .queue
                    .get(leased.job.id)
                    .await
                    .expect("get")
                    .expect("the job")
                    .lease_expires_at;
                ensure!(before == after, "a refused extension moved the lease");
            }
        }
        Ok(())
    }
));

/// Pops a job of a fresh queue and fails it with `message`; the stored `last_error` must be the
/// message, cut to its first `MAX_ERROR_CHARS` characters.
async fn failure_is_recorded(f: &Fixture, message: String) -> Result<(), TestCaseError> {
    let q = format!("f{}", name_part());
    f.queue
        .push(NewJob::new(q.clone(), &json!({})).expect("a payload"))
        .await
        .expect("push");
    let leased = f
        .queue
        .pop(PopRequest::new(q))
        .await
        .expect("pop")
        .remove(0);
    match f
        .queue
        .fail(&leased.lease, Failure::retryable(message.clone()))
        .await
    {
        Ok(FailOutcome::Retrying { .. }) => {}
        other => {
            return Err(TestCaseError::fail(format!(
                "fail({message:?}) returned {other:?}"
            )))
        }
    }
    let got = f
        .queue
        .get(leased.job.id)
        .await
        .expect("get")
        .expect("the job");
    // The rule: the first MAX_ERROR_CHARS characters, each NUL replaced by U+FFFD.
    let expected = message
        .chars()
        .take(MAX_ERROR_CHARS)
        .collect::<String>()
        .replace('\0', "\u{FFFD}");
    ensure!(
        got.state == JobState::Pending,
        "the job is {} after a retryable failure",
        got.state
    );
    ensure!(
        got.last_error.as_deref() == Some(expected.as_str()),
        "last_error is {:?}",
        got.last_error
    );
    Ok(())
}

on_every_backend!(failure_messages, |b| check(
    b,
    Limits::default(),
    prop_oneof![hostile_string(16), "\\PC{4090,4100}"],
    |f, message: String| async move { failure_is_recorded(&f, message).await }
));

on_every_backend!(payload_size_limit, |b: Backend| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let f = Fixture::open(b, Limits::default())
            .await
            .expect("a fixture");
        let limit = Limits::default().max_payload_bytes;
        // A JSON string of exactly `limit` bytes, and one byte more.
        let at_limit = "x".repeat(limit - 2);
        let id = f
            .queue
            .push(NewJob::new("big", &at_limit).expect("a payload"))
            .await
            .expect("a payload at the limit");
        let got = f.queue.get(id).await.expect("get").expect("the job");
        assert_eq!(
            got.payload_value(),
            Value::String(at_limit),
            "the largest payload came back changed"
        );
        for len in [limit - 1, 20 * 1024 * 1024] {
            let before = f.rows().await;
            let err = f
                .queue
                .push(NewJob::new("big", &"x".repeat(len)).expect("a payload"))
                .await
                .unwrap_err();
            assert!(
                matches!(&err, Error::InvalidInput { field, .. } if field == "payload"),
                "{len} bytes: {err:?}"
            );
            assert_eq!(f.rows().await, before, "a refused payload was stored");
        }
        f.close().await;
        // With the limit raised, 20 MB is stored and read back, or refused at connect naming
        // the limit the server cannot hold.
        let big = 20 * 1024 * 1024;
        let limits = Limits {
            max_payload_bytes: 32 * 1024 * 1024,
            ..Limits::default()
        };
        match Fixture::open(b, limits).await {
            Ok(f) => {
                let payload = "y".repeat(big);
                let id = f
                    .queue
                    .push(NewJob::new("big", &payload).expect("a payload"))
                    .await
                    .expect("a 20 MB payload");
                let got = f.queue.get(id).await.expect("get").expect("the job");
                assert!(
                    got.payload_value() == Value::String(payload),
                    "the 20 MB payload came back changed"
                );
                f.close().await;
            }
            Err(Error::InvalidInput { field, .. }) => {
                assert!(field.contains("payload"), "refusal named {field:?}")
            }
            Err(e) => panic!("raising the payload limit: {e:?}"),
        }
    })
});

// ---------------------------------------------------------------------------------------------
// URLs (no server needed)

#[test]
fn urls_never_panic_and_never_leak_passwords() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let strategy = (
        prop_oneof![
            Just("postgres"),
            Just("postgresql"),
            Just("mysql"),
            Just("mariadb"),
            Just("mssql"),
            Just("sqlserver"),
            Just("redis"),
            Just("http"),
            Just(""),
            Just("POSTGRES")
        ],
        "[A-Za-z0-9]{0,8}",
        "[A-Za-z0-9!$&()*+,;=~-]{1,16}",
        prop_oneof![
            Just("127.0.0.1:1".to_owned()),
            Just("[::1]:1".to_owned()),
            Just("localhost:1".to_owned()),
            "\\PC{0,12}"
        ],
    );
    let mut runner = TestRunner::new(Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |(scheme, user, password, host)| {
            let secret = format!("S3cr{password}t");
            let url = format!("{scheme}://{user}:{secret}@{host}/db");
            let options = Options {
                connect_timeout: Some(Duration::from_millis(300)),
                ..Options::default()
            };
            let outcome = rt.block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(10),
                    dbqueue::connect_with(&url, options),
                )
                .await
            });
            let Ok(result) = outcome else {
                return Err(TestCaseError::fail(format!("connect to {url:?} hung")));
            };
            match result {
                Ok(_) => Err(TestCaseError::fail(format!("{url:?} connected"))),
                Err(e) => {
                    let text = format!("{e} {e:?}");
                    ensure!(
                        !text.contains(&secret),
                        "the error for {url:?} shows the password: {text}"
                    );
                    if let Error::InvalidInput { field, .. } = &e {
                        ensure!(field == "url", "refusal named {field:?}");
                    }
                    Ok(())
                }
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

// ---------------------------------------------------------------------------------------------
// The input rules the backends once disagreed on (NUL, lone surrogates, trailing spaces in keys)
// and the error for a refused connection: each case pins one rule on every backend.

async fn nul_payload(f: &Fixture) -> Result<(), TestCaseError> {
    let value = json!({ "s": "a\u{0}b" });
    accepted_and_equal_or_refused(
        f,
        NewJob::new("nul", &value).expect("a payload"),
        "payload",
        |got| got.payload_value() == value,
    )
    .await
}

async fn lone_surrogate_payload(f: &Fixture) -> Result<(), TestCaseError> {
    let text = r#"{"s":"\ud800"}"#;
    let job = match NewJob::from_json("surrogate", text) {
        Ok(job) => job,
        Err(Error::InvalidInput { field, .. }) if field == "payload" => return Ok(()),
        Err(e) => return Err(TestCaseError::fail(format!("from_json: {e:?}"))),
    };
    accepted_and_equal_or_refused(f, job, "payload", |got| {
        got.payload.get() == text
            || got.payload_value() == serde_json::from_str::<Value>(text).unwrap_or(Value::Null)
    })
    .await
}

async fn nul_dedup_key(f: &Fixture) -> Result<(), TestCaseError> {
    let key = "a\u{0}b";
    accepted_and_equal_or_refused(
        f,
        NewJob::new("nulkey", &json!({}))
            .expect("a payload")
            .dedup_key(key),
        "dedup_key",
        |got| got.dedup_key.as_deref() == Some(key),
    )
    .await
}

async fn nul_worker_id(f: &Fixture) -> Result<(), TestCaseError> {
    let q = format!("w{}", name_part());
    f.queue
        .push(NewJob::new(q.clone(), &json!({})).expect("a payload"))
        .await
        .expect("push");
    let before = f.queue.stats(Some(&q)).await.expect("stats");
    match f
        .queue
        .pop(PopRequest::new(q.clone()).worker("w\u{0}1"))
        .await
    {
        Ok(got) => {
            let row = f
                .queue
                .get(got[0].job.id)
                .await
                .expect("get")
                .expect("the job");
            ensure!(
                row.worker.as_deref() == Some("w\u{0}1"),
                "worker came back as {:?}",
                row.worker
            );
        }
        other => {
            let field = refused_field(other)?;
            ensure!(field == "worker", "refusal named {field:?}");
            ensure!(
                f.queue.stats(Some(&q)).await.expect("stats") == before,
                "a refused pop changed the queue"
            );
        }
    }
    Ok(())
}

async fn accepted_and_equal_or_refused(
    f: &Fixture,
    job: NewJob,
    field_name: &str,
    equal: impl Fn(&dbqueue::Job) -> bool,
) -> Result<(), TestCaseError> {
    match push_or_field(f, job).await? {
        Ok(id) => {
            let got = f.queue.get(id).await.expect("get").expect("the job");
            ensure!(equal(&got), "the value came back changed: {got:?}");
        }
        Err(field) => ensure!(field == field_name, "refusal named {field:?}"),
    }
    Ok(())
}

fn once(b: Backend, case: impl AsyncFnOnce(&Fixture) -> Result<(), TestCaseError>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let f = Fixture::open(b, Limits::default())
            .await
            .expect("a fixture");
        let r = case(&f).await;
        f.close().await;
        if let Err(e) = r {
            panic!("{b:?}: {e}");
        }
    });
}

on_every_backend!(payload_with_nul, |b| once(b, nul_payload));
on_every_backend!(payload_with_lone_surrogate, |b| once(
    b,
    lone_surrogate_payload
));
on_every_backend!(dedup_key_with_nul, |b| once(b, nul_dedup_key));
on_every_backend!(worker_id_with_nul, |b| once(b, nul_worker_id));
on_every_backend!(failure_message_with_nul, |b| once(
    b,
    async |f: &Fixture| failure_is_recorded(f, "bad byte \u{0} here".to_owned()).await
));

/// Keys that differ only in trailing spaces are different keys.
async fn trailing_spaces_count(f: &Fixture) -> Result<(), TestCaseError> {
    keys_stay_apart(f, "k", "k ").await?;
    keys_stay_apart(f, "key\t", "key\t  ").await
}

on_every_backend!(dedup_keys_differing_by_trailing_spaces, |b| once(
    b,
    trailing_spaces_count
));

/// The same NUL and lone-surrogate inputs get the same answer (accepted or refused) on every
/// backend that runs.
#[test]
fn input_rules_agree_across_backends() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let mut answers = Vec::new();
        for b in [Backend::Sqlite, Backend::Postgres, Backend::Mysql] {
            if url_of(b).is_none() {
                continue;
            }
            let f = Fixture::open(b, Limits::default())
                .await
                .expect("a fixture");
            let mut row = Vec::new();
            for (what, job) in [
                (
                    "payload NUL",
                    NewJob::new("agree", &json!({"s": "\u{0}"})).expect("a payload"),
                ),
                (
                    "payload surrogate",
                    NewJob::from_json("agree", r#"{"s":"\udc00"}"#).expect("JSON text"),
                ),
                (
                    "key NUL",
                    NewJob::new("agree", &json!({}))
                        .expect("a payload")
                        .dedup_key("\u{0}"),
                ),
            ] {
                row.push((what, f.queue.push(job).await.is_ok()));
            }
            f.close().await;
            answers.push((b, row));
        }
        let first = &answers[0].1;
        for (b, row) in &answers[1..] {
            assert_eq!(
                row, first,
                "{b:?} answers differently from {:?}",
                answers[0].0
            );
        }
    });
}

/// Connecting to a port nobody listens on names the refused connection, with host and port.
async fn refused_connection_is_named(url: &str) {
    let options = Options {
        connect_timeout: Some(Duration::from_secs(2)),
        ..Options::default()
    };
    let err = dbqueue::connect_with(url, options)
        .await
        .err()
        .expect("no server listens there");
    let text = err.to_string();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert!(
        text.to_lowercase().contains("refused")
            && text.contains("127.0.0.1")
            && text.contains(":1"),
        "{text}"
    );
}

#[test]
fn refused_connection_postgres() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(refused_connection_is_named(
        "postgres://postgres@127.0.0.1:1/test",
    ));
}

#[test]
fn refused_connection_mysql() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(refused_connection_is_named("mysql://root@127.0.0.1:1/test"));
}
