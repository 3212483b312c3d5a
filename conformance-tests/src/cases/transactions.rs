//! Work inside the caller's own transaction (capability `transactions`).

use anyhow::{bail, ensure};
use queue_core::{Error, JobState};
use serde_json::json;

use super::{
    expect_only_job, expect_state, get, job, large_batch, pop, pop_one, row_fingerprint,
    sleep_until_db, LONG_LEASE, SHORT_LEASE,
};
use crate::{Ctx, Fixture, Transactions};
use std::sync::Arc;

/// The caller-transaction hooks, or the reason the case does not apply.
fn hooks<'a>(ctx: &Ctx, fx: &'a Arc<dyn Fixture>) -> anyhow::Result<&'a dyn Transactions> {
    if !fx.queue().capabilities().transactions {
        return Err(ctx.skip("capability `transactions` is absent"));
    }
    fx.transactions().ok_or_else(|| {
        ctx.skip("the backend has the capability `transactions` but the harness wires no hooks")
    })
}

/// A push inside a transaction that rolls back is never visible, nor is the caller's write.
pub async fn tx_push_rolled_back_is_invisible(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let tx = hooks(&ctx, &fx)?;
    let q = fx.queue();
    let id = tx
        .push_in_tx(job("txq", json!("ghost")), "rolled-back", false)
        .await?;
    ensure!(q.get(id).await?.is_none(), "a rolled-back push is stored");
    ensure!(
        tx.effects("rolled-back").await? == 0,
        "the caller's rolled-back write is stored"
    );
    ensure!(
        pop(&q, "txq", 10, LONG_LEASE, "w").await?.is_empty(),
        "a rolled-back push was delivered"
    );
    let other = fx.another().await?;
    ensure!(other.get(id).await?.is_none());
    ensure!(super::all_jobs(&q).await?.is_empty());
    Ok(())
}

/// A push inside a committed transaction is stored, with the caller's write, and delivered.
pub async fn tx_push_committed_is_visible(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let tx = hooks(&ctx, &fx)?;
    let q = fx.queue();
    let id = tx
        .push_in_tx(job("txq", json!("real")), "committed", true)
        .await?;
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.payload_value() == json!("real"));
    ensure!(tx.effects("committed").await? == 1);
    let other = fx.another().await?;
    let l = pop_one(&other, "txq").await?;
    ensure!(l.job.id == id);
    Ok(())
}

/// Completing inside the caller's transaction: with a live lease the job and the caller's write
/// commit together; after the lease was lost (or the job cancelled) completing fails, the
/// caller's write is rolled back, and the row is unchanged.
pub async fn tx_complete_exactly_once(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let tx = hooks(&ctx, &fx)?;
    let q = fx.queue();

    // Live lease: both commit.
    let id = q.push(job("txc", json!("live"))).await?;
    let l = pop_one(&q, "txc").await?;
    tx.complete_in_tx(&l.lease, "effect-live").await?;
    let j = expect_state(&q, id, JobState::Completed).await?;
    ensure!(j.finished_at.is_some() && j.lease_expires_at.is_none());
    ensure!(tx.effects("effect-live").await? == 1);
    // Completing again with the same lease: LeaseLost, no second effect.
    match tx.complete_in_tx(&l.lease, "effect-live").await {
        Err(Error::LeaseLost { job }) if job == id => {}
        other => bail!("second complete_in_tx: expected LeaseLost, got {other:?}"),
    }
    ensure!(
        tx.effects("effect-live").await? == 1,
        "a second completion committed its effect"
    );

    // Lost lease: rescued and claimed by another holder.
    let id = q.push(job("txc", json!("lost"))).await?;
    let old = pop(&q, "txc", 1, SHORT_LEASE, "old").await?.remove(0);
    sleep_until_db(&q, old.lease.expires_at).await?;
    ensure!(q.rescue_expired().await? == 1);
    let new = pop(&q, "txc", 1, LONG_LEASE, "new").await?.remove(0);
    ensure!(new.job.id == id);
    let before = row_fingerprint(&get(&q, id).await?);
    match tx.complete_in_tx(&old.lease, "effect-stale").await {
        Err(Error::LeaseLost { job }) if job == id => {}
        other => bail!("complete_in_tx with a lost lease: expected LeaseLost, got {other:?}"),
    }
    ensure!(
        tx.effects("effect-stale").await? == 0,
        "the stale holder's write committed"
    );
    ensure!(
        row_fingerprint(&get(&q, id).await?) == before,
        "the stale completion changed the row"
    );
    tx.complete_in_tx(&new.lease, "effect-new").await?;
    ensure!(tx.effects("effect-new").await? == 1);
    expect_state(&q, id, JobState::Completed).await?;

    // Cancelled while held.
    let id = q.push(job("txc", json!("cancelled"))).await?;
    let l = pop_one(&q, "txc").await?;
    q.cancel(id).await?;
    match tx.complete_in_tx(&l.lease, "effect-cancelled").await {
        Err(Error::Cancelled { job }) if job == id => {}
        other => bail!("complete_in_tx of a cancelled job: expected Cancelled, got {other:?}"),
    }
    ensure!(tx.effects("effect-cancelled").await? == 0);
    expect_state(&q, id, JobState::Cancelled).await?;
    Ok(())
}

/// A batch pushed inside the caller's transaction that takes several statements (more jobs than
/// any dialect writes with one; due later, so not one PostgreSQL COPY) and clashes on its last
/// job fails with `Duplicate`, leaves none of its jobs in the transaction and the transaction
/// usable: the caller's write before it commits.
pub async fn tx_failed_batch_keeps_the_callers_writes(ctx: Ctx) -> anyhow::Result<()> {
    let (fx, jobs) = large_batch(&ctx, "txb", "taken").await?;
    let tx = hooks(&ctx, &fx)?;
    let q = fx.queue();
    let live = q.push(job("txb", json!("live")).dedup_key("taken")).await?;
    match tx.push_batch_in_tx(jobs, "before-batch").await {
        Err(Error::Duplicate { queue, dedup_key }) if queue == "txb" && dedup_key == "taken" => {}
        other => bail!(
            "expected Duplicate(txb, taken), got {:?}",
            other.map(|ids| ids.len())
        ),
    }
    ensure!(
        tx.effects("before-batch").await? == 1,
        "the caller's write before the failed batch did not commit"
    );
    expect_only_job(&q, live).await
}

/// A push inside the caller's transaction that clashes with a live dedup key fails with
/// `Duplicate` naming the key, and stores nothing of that transaction.
pub async fn tx_push_duplicate_is_named(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let tx = hooks(&ctx, &fx)?;
    let q = fx.queue();
    let live = q.push(job("txd", json!("live")).dedup_key("taken")).await?;
    match tx
        .push_in_tx(job("txd", json!("again")).dedup_key("taken"), "dup", true)
        .await
    {
        Err(Error::Duplicate { queue, dedup_key }) if queue == "txd" && dedup_key == "taken" => {}
        other => bail!("expected Duplicate(txd, taken), got {other:?}"),
    }
    ensure!(
        tx.effects("dup").await? == 0,
        "the failed transaction's write is stored"
    );
    let jobs = super::all_jobs(&q).await?;
    ensure!(jobs.len() == 1 && jobs[0].id == live, "{jobs:?}");
    Ok(())
}
