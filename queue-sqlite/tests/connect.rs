//! Opening databases: URLs and paths, bad settings, unreachable files, migrations.

mod common;

use std::time::{Duration, Instant};

use queue_core::{ClaimStrategy, Error, NewJob, PopRequest, Queue};
use queue_sqlite::SqliteQueue;

#[tokio::test]
async fn a_missing_directory_is_unavailable_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/queue.db");
    let t = Instant::now();
    let err = SqliteQueue::builder(format!("sqlite://{}", path.display()))
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(!path.exists());
}

#[tokio::test]
async fn bad_settings_are_rejected() {
    let err = SqliteQueue::builder("sqlite://x.db")
        .claim_strategy(ClaimStrategy::SkipLocked)
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidInput { ref field, .. } if field == "claim_strategy"),
        "{err:?}"
    );
    let err = SqliteQueue::builder("postgres://u:secret@h/db")
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "url"));
    assert!(!err.to_string().contains("secret"), "{err}");
    let err = SqliteQueue::builder("sqlite://x.db")
        .max_connections(0)
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "max_connections"));
    assert!(!std::path::Path::new("x.db").exists());
}

#[tokio::test]
async fn every_spelling_of_a_path_opens_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spelled.db");
    let plain = SqliteQueue::builder(path.display().to_string())
        .connect()
        .await
        .unwrap();
    plain.migrate().await.unwrap();
    let id = plain.push(NewJob::new("q", &1).unwrap()).await.unwrap();
    assert!(path.exists());
    for url in [
        format!("sqlite://{}", path.display()),
        format!("sqlite:{}", path.display()),
        format!("SQLite://{}", path.display()),
    ] {
        let q = SqliteQueue::builder(url).connect().await.unwrap();
        assert_eq!(q.get(id).await.unwrap().unwrap().id, id);
    }
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(plain.writer_pool())
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn in_memory_database_works() {
    let q = SqliteQueue::builder("sqlite::memory:")
        .connect()
        .await
        .unwrap();
    q.migrate().await.unwrap();
    let id = q.push(NewJob::new("q", &1).unwrap()).await.unwrap();
    assert_eq!(q.get(id).await.unwrap().unwrap().id, id);
    let got = q.pop(PopRequest::new("q")).await.unwrap();
    q.ack(&got[0].lease).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_migrations_apply_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut queues = Vec::new();
    for _ in 0..4 {
        queues.push(common::open(&dir, ClaimStrategy::WriteLock).await);
    }
    let tasks: Vec<_> = queues
        .iter()
        .cloned()
        .map(|q| tokio::spawn(async move { q.migrate().await }))
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    // And again: idempotent.
    queues[0].migrate().await.unwrap();
    let versions: Vec<i64> = sqlx::query_scalar("SELECT version FROM queue_migrations")
        .fetch_all(queues[0].writer_pool())
        .await
        .unwrap();
    assert_eq!(versions, vec![1]);
    queues[1].push(NewJob::new("q", &1).unwrap()).await.unwrap();
}

#[tokio::test]
async fn the_claim_uses_the_partial_index() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    let rows = sqlx::query(
        "EXPLAIN QUERY PLAN SELECT rowid FROM queue_jobs \
         WHERE queue = ?1 AND state = 'pending' AND run_at <= ?2 \
         ORDER BY priority DESC, run_at, id LIMIT ?3",
    )
    .bind("q")
    .bind(0i64)
    .bind(1i64)
    .fetch_all(q.writer_pool())
    .await
    .unwrap();
    let detail: Vec<String> = rows
        .iter()
        .map(|r| sqlx::Row::get::<String, _>(r, "detail"))
        .collect();
    let detail = detail.join("\n");
    assert!(detail.contains("queue_jobs_claim"), "{detail}");
    assert!(
        !detail.contains("TEMP B-TREE"),
        "sorts instead of walking the index: {detail}"
    );
}

#[tokio::test]
async fn a_write_lock_held_past_the_busy_timeout_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.db");
    let q = SqliteQueue::builder(path.display().to_string())
        .busy_timeout(Duration::from_millis(100))
        .connect()
        .await
        .unwrap();
    q.migrate().await.unwrap();
    // Another process holds the write lock.
    let other = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let holder = other.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let t = Instant::now();
    let err = q.push(NewJob::new("q", &1).unwrap()).await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert!(t.elapsed() >= Duration::from_millis(100));
    assert!(matches!(
        q.pop(PopRequest::new("q")).await.unwrap_err(),
        Error::Unavailable { .. }
    ));
    // Reads go on under WAL, and writes resume once the lock is released.
    assert!(q.stats(None).await.unwrap().is_empty());
    holder.rollback().await.unwrap();
    q.push(NewJob::new("q", &1).unwrap()).await.unwrap();
}
