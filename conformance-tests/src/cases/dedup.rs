//! Dedup keys and all-or-nothing batches.

use anyhow::{bail, ensure};
use queue_core::{Error, Failure, JobState, NewJob};
use serde_json::json;

use super::{all_jobs, expect_only_job, expect_state, job, large_batch, pop_one};
use crate::Ctx;

fn expect_duplicate<T: std::fmt::Debug>(
    what: &str,
    queue: &str,
    key: &str,
    r: queue_core::Result<T>,
) -> anyhow::Result<()> {
    match r {
        Err(Error::Duplicate {
            queue: q,
            dedup_key,
        }) if q == queue && dedup_key == key => Ok(()),
        other => bail!("{what}: expected Duplicate({queue}, {key}), got {other:?}"),
    }
}

/// A dedup key is refused while a job holding it is pending or running, in the same queue
/// only, and free again once that job finished.
pub async fn dedup_rejected_while_live(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let first = q.push(job("dd", json!(1)).dedup_key("order-42")).await?;
    expect_duplicate(
        "second push while pending",
        "dd",
        "order-42",
        q.push(job("dd", json!(2)).dedup_key("order-42")).await,
    )?;
    // Another queue may use the same key.
    let elsewhere = q
        .push(job("dd-other", json!(3)).dedup_key("order-42"))
        .await?;
    let l = pop_one(&q, "dd").await?;
    ensure!(l.job.id == first && l.job.dedup_key.as_deref() == Some("order-42"));
    expect_duplicate(
        "push while running",
        "dd",
        "order-42",
        q.push(job("dd", json!(4)).dedup_key("order-42")).await,
    )?;
    let jobs = all_jobs(&q).await?;
    ensure!(jobs.len() == 2, "{} rows stored, expected 2", jobs.len());
    q.ack(&l.lease).await?;
    let second = q.push(job("dd", json!(5)).dedup_key("order-42")).await?;
    expect_state(&q, second, JobState::Pending).await?;
    expect_state(&q, first, JobState::Completed).await?;
    expect_state(&q, elsewhere, JobState::Pending).await?;
    Ok(())
}

/// The key is freed by every finished state (dead, cancelled), and `retry` of a job whose key
/// was taken meanwhile is `Duplicate` and changes nothing.
pub async fn dedup_reusable_after_finish(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let a = q.push(job("dk", json!("a")).dedup_key("k")).await?;
    q.cancel(a).await?;
    let b = q.push(job("dk", json!("b")).dedup_key("k")).await?;
    let l = pop_one(&q, "dk").await?;
    ensure!(l.job.id == b);
    q.fail(&l.lease, Failure::permanent("x")).await?;
    expect_state(&q, b, JobState::Dead).await?;
    let c = q.push(job("dk", json!("c")).dedup_key("k")).await?;
    expect_duplicate(
        "retry of a dead job whose key is live again",
        "dk",
        "k",
        q.retry(b).await,
    )?;
    expect_state(&q, b, JobState::Dead).await?;
    expect_duplicate(
        "retry of a cancelled job whose key is live again",
        "dk",
        "k",
        q.retry(a).await,
    )?;
    expect_state(&q, a, JobState::Cancelled).await?;
    q.cancel(c).await?;
    q.retry(b).await?;
    expect_state(&q, b, JobState::Pending).await?;
    Ok(())
}

/// A batch with one invalid job stores nothing, and the error names `jobs[i].field`.
pub async fn batch_with_invalid_job_stores_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let batch = vec![
        job("bi", json!(0)),
        job("bi", json!(1)),
        job("bi", json!(2)).max_attempts(0),
        job("bi", json!(3)),
    ];
    match q.push_batch(batch).await {
        Err(Error::InvalidInput { field, .. }) if field == "jobs[2].max_attempts" => {}
        other => bail!("expected InvalidInput on jobs[2].max_attempts, got {other:?}"),
    }
    let batch = vec![job("bi", json!(0)), job("bad queue!", json!(1))];
    match q.push_batch(batch).await {
        Err(Error::InvalidInput { field, .. }) if field == "jobs[1].queue" => {}
        other => bail!("expected InvalidInput on jobs[1].queue, got {other:?}"),
    }
    ensure!(
        all_jobs(&q).await?.is_empty(),
        "a rejected batch stored rows"
    );
    ensure!(q
        .stats(None)
        .await?
        .iter()
        .all(|s| s.available + s.scheduled == 0));
    Ok(())
}

/// A batch that clashes on a dedup key (with a stored job, or within itself) stores nothing.
pub async fn batch_with_dedup_clash_stores_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let existing = q.push(job("bd", json!("old")).dedup_key("taken")).await?;
    let batch: Vec<NewJob> = vec![
        job("bd", json!(0)),
        job("bd", json!(1)).dedup_key("fresh"),
        job("bd", json!(2)).dedup_key("taken"),
        job("bd", json!(3)),
    ];
    expect_duplicate(
        "batch clashing with a stored job",
        "bd",
        "taken",
        q.push_batch(batch).await,
    )?;
    let batch = vec![
        job("bd", json!(4)).dedup_key("twice"),
        job("bd", json!(5)),
        job("bd", json!(6)).dedup_key("twice"),
    ];
    expect_duplicate(
        "batch clashing with itself",
        "bd",
        "twice",
        q.push_batch(batch).await,
    )?;
    let jobs = all_jobs(&q).await?;
    ensure!(
        jobs.len() == 1 && jobs[0].id == existing,
        "rejected batches stored {} rows",
        jobs.len() - 1
    );
    // The keys of the rejected batch are still free.
    q.push(job("bd", json!(7)).dedup_key("fresh")).await?;
    q.push(job("bd", json!(8)).dedup_key("twice")).await?;
    ensure!(all_jobs(&q).await?.len() == 3);
    Ok(())
}

/// A batch of more jobs than any dialect writes with one statement (due later, so not one
/// PostgreSQL COPY) that clashes on its last job stores nothing.
pub async fn large_batch_with_dedup_clash_stores_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let (fx, batch) = large_batch(&ctx, "bl", "taken").await?;
    let q = fx.queue();
    let existing = q.push(job("bl", json!("old")).dedup_key("taken")).await?;
    expect_duplicate(
        "a large batch clashing on its last job",
        "bl",
        "taken",
        q.push_batch(batch).await,
    )?;
    expect_only_job(&q, existing).await
}

/// Dedup keys compare byte for byte on every backend: trailing spaces, case and accents make
/// different keys. A clash names the exact key that a live job holds, also when it is the
/// last of several keyed jobs in a batch.
pub async fn dedup_keys_compare_byte_for_byte(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    for key in ["k", "k ", " k", "K", "ḱ", "k\t", "ke"] {
        q.push(job("bytes", json!(key)).dedup_key(key)).await?;
    }
    ensure!(all_jobs(&q).await?.len() == 7, "distinct keys were merged");
    expect_duplicate(
        "the same key again",
        "bytes",
        "k ",
        q.push(job("bytes", json!(0)).dedup_key("k ")).await,
    )?;
    let batch = vec![
        job("bytes", json!(1)).dedup_key("new-1"),
        job("bytes", json!(2)).dedup_key("new-2"),
        job("bytes", json!(3)).dedup_key("K"),
    ];
    expect_duplicate(
        "the batch's third key",
        "bytes",
        "K",
        q.push_batch(batch).await,
    )?;
    ensure!(
        all_jobs(&q).await?.len() == 7,
        "the rejected batch stored rows"
    );
    Ok(())
}

/// Pushing a job whose id exists already is a database error, not a dedup clash, even when
/// the job has a dedup key of its own; nothing is changed.
pub async fn id_clash_is_not_a_dedup_clash(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("ids", json!(1)).dedup_key("a")).await?;
    for again in [
        job("ids", json!(2)).with_id(id),
        job("ids", json!(3)).with_id(id).dedup_key("b"),
    ] {
        match q.push(again).await {
            Err(Error::Database { .. }) => {}
            other => bail!("pushing an existing id: expected Database, got {other:?}"),
        }
    }
    match q
        .push_batch(vec![
            job("ids", json!(4)).dedup_key("c"),
            job("ids", json!(5)).with_id(id),
        ])
        .await
    {
        Err(Error::Database { .. }) => {}
        other => bail!("a batch reusing an id: expected Database, got {other:?}"),
    }
    let jobs = all_jobs(&q).await?;
    ensure!(
        jobs.len() == 1 && jobs[0].payload_value() == json!(1),
        "{jobs:?}"
    );
    // The keys b and c were never stored.
    q.push(job("ids", json!(6)).dedup_key("b")).await?;
    q.push(job("ids", json!(7)).dedup_key("c")).await?;
    Ok(())
}
