//! Leases: expiry and rescue, fencing of stale holders, extension.

use std::time::Duration;

use anyhow::{anyhow, ensure};
use queue_core::{FailOutcome, Failure, JobState};
use serde_json::json;

use super::{
    expect_lease_lost, expect_state, get, job, pop, row_fingerprint, sleep_until_db, LONG_LEASE,
    SHORT_LEASE,
};
use crate::Ctx;

/// A job whose lease expired is rescued to pending (with the reason recorded) and delivered
/// again, the new claim counted as the next attempt.
pub async fn expired_lease_rescued_and_redelivered(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("resc", json!("x")).max_attempts(3)).await?;
    let keep = q.push(job("resc", json!("held"))).await?;
    // Long enough for the next claim and a rescue to run before it expires.
    let l = pop(&q, "resc", 1, Duration::from_secs(2), "crashed")
        .await?
        .remove(0);
    ensure!(l.job.id == id);
    let held = pop(&q, "resc", 1, LONG_LEASE, "alive").await?.remove(0);
    ensure!(held.job.id == keep);
    ensure!(q.rescue_expired().await? == 0, "a live lease was rescued");
    expect_state(&q, id, JobState::Running).await?;
    sleep_until_db(&q, l.lease.expires_at).await?;
    ensure!(
        q.rescue_expired().await? == 1,
        "expected exactly the expired job to be rescued"
    );
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.attempts == 1, "attempts after rescue: {}", j.attempts);
    ensure!(
        j.lease_expires_at.is_none(),
        "a rescued job kept its lease expiry"
    );
    ensure!(
        j.last_error.as_deref() == Some("lease expired"),
        "last_error {:?}",
        j.last_error
    );
    expect_state(&q, keep, JobState::Running).await?;
    ensure!(q.rescue_expired().await? == 0, "a second rescue found work");
    let again = pop(&q, "resc", 1, LONG_LEASE, "w2").await?;
    ensure!(
        again.len() == 1 && again[0].job.id == id,
        "the rescued job was not redelivered"
    );
    ensure!(
        again[0].lease.attempt == 2,
        "redelivered as attempt {}",
        again[0].lease.attempt
    );
    let j = expect_state(&q, id, JobState::Running).await?;
    ensure!(j.attempts == 2 && j.worker.as_deref() == Some("w2"));
    Ok(())
}

/// When an expired job has used its attempts, the rescuer makes it dead.
pub async fn rescue_after_last_attempt_goes_dead(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("rd", json!("x")).max_attempts(1)).await?;
    let l = pop(&q, "rd", 1, SHORT_LEASE, "crashed").await?.remove(0);
    sleep_until_db(&q, l.lease.expires_at).await?;
    ensure!(q.rescue_expired().await? == 1);
    let j = expect_state(&q, id, JobState::Dead).await?;
    ensure!(
        j.attempts == 1 && j.finished_at.is_some() && j.lease_expires_at.is_none(),
        "{j:?}"
    );
    ensure!(pop(&q, "rd", 1, LONG_LEASE, "w").await?.is_empty());
    expect_lease_lost("ack after rescue to dead", id, q.ack(&l.lease).await)?;
    expect_state(&q, id, JobState::Dead).await?;
    Ok(())
}

/// A holder whose lease was lost (rescued and claimed by another) gets `LeaseLost` from ack,
/// fail, extend and release, and the row stays exactly as the new holder left it.
pub async fn stale_holder_gets_lease_lost(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("stale", json!("x")).max_attempts(5)).await?;
    let old = pop(&q, "stale", 1, SHORT_LEASE, "old").await?.remove(0);
    sleep_until_db(&q, old.lease.expires_at).await?;
    ensure!(q.rescue_expired().await? == 1);
    let new = pop(&q, "stale", 1, LONG_LEASE, "new").await?.remove(0);
    ensure!(new.job.id == id && new.lease.token != old.lease.token);
    let before = get(&q, id).await?;
    ensure!(
        before.state == JobState::Running
            && before.attempts == 2
            && before.worker.as_deref() == Some("new")
    );
    let fp = row_fingerprint(&before);
    expect_lease_lost("stale ack", id, q.ack(&old.lease).await)?;
    ensure!(
        row_fingerprint(&get(&q, id).await?) == fp,
        "a stale ack changed the row"
    );
    expect_lease_lost(
        "stale fail",
        id,
        q.fail(&old.lease, Failure::retryable("late")).await,
    )?;
    ensure!(
        row_fingerprint(&get(&q, id).await?) == fp,
        "a stale fail changed the row"
    );
    expect_lease_lost(
        "stale permanent fail",
        id,
        q.fail(&old.lease, Failure::permanent("late")).await,
    )?;
    expect_lease_lost(
        "stale extend",
        id,
        q.extend(&old.lease, Duration::from_secs(60)).await,
    )?;
    ensure!(
        row_fingerprint(&get(&q, id).await?) == fp,
        "a stale extend changed the row"
    );
    expect_lease_lost("stale release", id, q.release(&old.lease).await)?;
    ensure!(
        q.ack_batch(std::slice::from_ref(&old.lease)).await? == 0,
        "a stale lease was acked in a batch"
    );
    let after = get(&q, id).await?;
    ensure!(
        row_fingerprint(&after) == fp,
        "stale calls changed the row:\n{fp}\n{}",
        row_fingerprint(&after)
    );
    // The current holder is unaffected.
    let outcome = q.fail(&new.lease, Failure::retryable("real")).await?;
    ensure!(matches!(outcome, FailOutcome::Retrying { .. }));
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.last_error.as_deref() == Some("real") && j.attempts == 2);
    Ok(())
}

/// Extending a lease moves its expiry and keeps the rescuer away.
pub async fn extend_prevents_rescue(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("ext", json!("x"))).await?;
    let l = pop(&q, "ext", 1, SHORT_LEASE, "w").await?.remove(0);
    let before = q.now().await?;
    let extended = q.extend(&l.lease, Duration::from_secs(10)).await?;
    ensure!(extended.token == l.lease.token && extended.job_id == id && extended.attempt == 1);
    let ahead = (extended.expires_at - before).to_std().unwrap_or_default();
    ensure!(
        ahead >= Duration::from_millis(9_900) && ahead <= Duration::from_secs(12),
        "extended lease expires {ahead:?} from now, expected about 10 s"
    );
    let j = expect_state(&q, id, JobState::Running).await?;
    let stored = j
        .lease_expires_at
        .ok_or_else(|| anyhow!("no lease expiry stored"))?;
    ensure!(
        (stored - extended.expires_at).num_milliseconds().abs() <= 1,
        "stored {stored}, returned {}",
        extended.expires_at
    );
    sleep_until_db(&q, l.lease.expires_at).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    ensure!(
        q.rescue_expired().await? == 0,
        "an extended lease was rescued"
    );
    let j = expect_state(&q, id, JobState::Running).await?;
    ensure!(j.attempts == 1);
    ensure!(pop(&q, "ext", 1, LONG_LEASE, "w2").await?.is_empty());
    // Both the old and the extended lease value name the same claim.
    q.ack(&extended).await?;
    expect_state(&q, id, JobState::Completed).await?;
    Ok(())
}
