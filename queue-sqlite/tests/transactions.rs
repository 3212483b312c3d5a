//! Pushing and completing inside the caller's own transaction.

mod common;

use std::time::Duration;

use common::{count, raw};
use queue_core::{ClaimStrategy, Error, NewJob, PopRequest, Queue};
use queue_sqlite::SqliteQueue;
use serde_json::json;

async fn effects_table(q: &SqliteQueue) {
    sqlx::query("CREATE TABLE effects (marker TEXT NOT NULL)")
        .execute(q.writer_pool())
        .await
        .unwrap();
}

async fn effects(q: &SqliteQueue, marker: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM effects WHERE marker = ?")
        .bind(marker)
        .fetch_one(q.writer_pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn push_in_tx_exists_iff_committed() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    assert!(q.capabilities().transactions);
    effects_table(&q).await;

    let mut tx = q.begin().await.unwrap();
    sqlx::query("INSERT INTO effects (marker) VALUES ('rolled-back')")
        .execute(&mut *tx)
        .await
        .unwrap();
    let ghost = q
        .push_in_tx(&mut tx, NewJob::new("q", &json!("ghost")).unwrap())
        .await
        .unwrap();
    let ghosts = q
        .push_batch_in_tx(
            &mut tx,
            vec![NewJob::new("q", &1).unwrap(), NewJob::new("q", &2).unwrap()],
        )
        .await
        .unwrap();
    // Readers do not see uncommitted rows.
    assert!(q.get(ghost).await.unwrap().is_none());
    tx.rollback().await.unwrap();
    assert!(q.get(ghost).await.unwrap().is_none());
    assert!(q.get(ghosts[0]).await.unwrap().is_none());
    assert_eq!(effects(&q, "rolled-back").await, 0);
    assert_eq!(count(&q).await, 0);

    let mut tx = q.begin().await.unwrap();
    sqlx::query("INSERT INTO effects (marker) VALUES ('committed')")
        .execute(&mut *tx)
        .await
        .unwrap();
    let real = q
        .push_in_tx(&mut tx, NewJob::new("q", &json!("real")).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(effects(&q, "committed").await, 1);
    let got = q.pop(PopRequest::new("q")).await.unwrap();
    assert_eq!(got[0].job.id, real);
}

#[tokio::test]
async fn push_in_tx_reports_duplicates() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    q.push(NewJob::new("q", &1).unwrap().dedup_key("k"))
        .await
        .unwrap();
    let mut tx = q.begin().await.unwrap();
    let err = q
        .push_in_tx(&mut tx, NewJob::new("q", &2).unwrap().dedup_key("k"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Duplicate { .. }), "{err:?}");
    tx.rollback().await.unwrap();
    assert_eq!(count(&q).await, 1);
}

#[tokio::test]
async fn complete_in_tx_commits_with_the_callers_writes() {
    let (q, _dir) = common::queue(ClaimStrategy::WriteLock).await;
    effects_table(&q).await;
    let id = q.push(NewJob::new("q", &1).unwrap()).await.unwrap();
    let l = q.pop(PopRequest::new("q")).await.unwrap().remove(0);

    let mut tx = q.begin().await.unwrap();
    sqlx::query("INSERT INTO effects (marker) VALUES ('live')")
        .execute(&mut *tx)
        .await
        .unwrap();
    q.complete_in_tx(&mut tx, &l.lease).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(raw(&q, id).await.unwrap().state, "completed");
    assert_eq!(effects(&q, "live").await, 1);

    // Again with the same lease: lost; the caller rolls back its write.
    let mut tx = q.begin().await.unwrap();
    sqlx::query("INSERT INTO effects (marker) VALUES ('live')")
        .execute(&mut *tx)
        .await
        .unwrap();
    let err = q.complete_in_tx(&mut tx, &l.lease).await.unwrap_err();
    assert!(
        matches!(err, Error::LeaseLost { job } if job == id),
        "{err:?}"
    );
    tx.rollback().await.unwrap();
    assert_eq!(effects(&q, "live").await, 1);

    // Cancelled while held.
    let id = q.push(NewJob::new("q", &2).unwrap()).await.unwrap();
    let l = q
        .pop(PopRequest::new("q").lease(Duration::from_secs(60)))
        .await
        .unwrap()
        .remove(0);
    q.cancel(id).await.unwrap();
    let mut tx = q.begin().await.unwrap();
    let err = q.complete_in_tx(&mut tx, &l.lease).await.unwrap_err();
    assert!(
        matches!(err, Error::Cancelled { job } if job == id),
        "{err:?}"
    );
    tx.rollback().await.unwrap();
    assert_eq!(raw(&q, id).await.unwrap().state, "cancelled");
}
