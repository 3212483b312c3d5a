//! Claims that continue from where the last claim of a queue stopped (PostgreSQL and
//! MySQL/MariaDB, while a queue has a backlog): they keep the claim order and hide no job for
//! long. On the other backends every claim reads from the head of the queue and the same
//! cases hold trivially.

use std::time::{Duration, Instant};

use anyhow::ensure;
use queue_core::{ClaimStrategy, JobId, JobState};
use serde_json::json;

use super::{expect_state, job, pop, LONG_LEASE};
use crate::Ctx;

/// Pushes `n` jobs of `queue` one by one (each due a little after the one before).
async fn push_n(
    q: &std::sync::Arc<dyn queue_core::Queue>,
    queue: &str,
    n: usize,
) -> anyhow::Result<Vec<JobId>> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        ids.push(q.push(job(queue, json!({ "i": i }))).await?);
    }
    Ok(ids)
}

/// The ids of up to `limit` jobs of `queue` claimed by worker "w1", in claim order.
async fn pop_ids(
    q: &std::sync::Arc<dyn queue_core::Queue>,
    queue: &str,
    limit: usize,
) -> anyhow::Result<Vec<JobId>> {
    Ok(pop(q, queue, limit, LONG_LEASE, "w1")
        .await?
        .into_iter()
        .map(|l| l.job.id)
        .collect())
}

/// Claims through a backlog take exactly the head of the claim order each time, also after a
/// job was released in between (it goes back where the backend's release puts it).
pub async fn claims_continue_in_claim_order(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let ids = push_n(&q, "pos", 8).await?;
    let first = pop(&q, "pos", 3, LONG_LEASE, "w1").await?;
    let got: Vec<_> = first.iter().map(|l| l.job.id).collect();
    ensure!(
        got == ids[..3],
        "first claim {got:?}, expected {:?}",
        &ids[..3]
    );
    q.release(&first[0].lease).await?;
    expect_state(&q, ids[0], JobState::Pending).await?;
    // The pending jobs in claim order, as the database holds them now.
    let mut pending = Vec::new();
    for id in &ids {
        let j = super::get(&q, *id).await?;
        if j.state == JobState::Pending {
            pending.push((-i64::from(j.priority), j.run_at, j.id));
        }
    }
    pending.sort();
    let want: Vec<JobId> = pending.iter().take(3).map(|p| p.2).collect();
    let second = pop(&q, "pos", 3, LONG_LEASE, "w1").await?;
    let got: Vec<_> = second.iter().map(|l| l.job.id).collect();
    ensure!(
        got == want,
        "after the release the claim took {got:?}, the head of the claim order is {want:?}"
    );
    for id in &got {
        expect_state(&q, *id, JobState::Running).await?;
    }
    let left = pending.len() - 3;
    let rest = pop(&q, "pos", 10, LONG_LEASE, "w1").await?;
    ensure!(
        rest.len() == left,
        "{} of the {left} left were claimed",
        rest.len()
    );
    Ok(())
}

/// A job of a higher priority pushed while claims continue through a backlog comes first;
/// a lower priority comes after every job of the backlog's.
pub async fn higher_priority_first_while_claims_continue(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let low = q.push(job("pos", json!("low")).priority(-1)).await?;
    let ids = push_n(&q, "pos", 8).await?;
    let first = pop_ids(&q, "pos", 3).await?;
    ensure!(first == ids[..3], "first claim {first:?}");
    let high = q.push(job("pos", json!("high")).priority(5)).await?;
    let second = pop_ids(&q, "pos", 3).await?;
    ensure!(
        second == vec![high, ids[3], ids[4]],
        "second claim {second:?}, expected the new job of priority 5 first"
    );
    let rest = pop_ids(&q, "pos", 10).await?;
    ensure!(
        rest == vec![ids[5], ids[6], ids[7], low],
        "the rest came as {rest:?}, expected the backlog then the job of priority -1"
    );
    for id in ids.iter().chain([&low, &high]) {
        expect_state(&q, *id, JobState::Running).await?;
    }
    Ok(())
}

/// A job that becomes claimable behind the position of this process's claims without this
/// process knowing (its row was locked by another transaction while the claims passed it, so
/// they skipped it) is claimed within seconds while a backlog remains, each job exactly once.
pub async fn a_job_behind_the_position_is_claimed_soon(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    if q.capabilities().claim != ClaimStrategy::SkipLocked {
        // Elsewhere a claim waits for the locked row (or the write lock) instead of passing it.
        return Err(ctx.skip("only a claim that skips locked rows passes a job"));
    }
    // A backlog that outlasts the wait below at one claim per 100 ms: the passed job must come
    // while one remains.
    let ids = push_n(&q, "pos", 200).await?;
    let Some(held) = fx.lock_job(ids[0]).await? else {
        return Err(ctx.skip("the backend cannot hold a job's row from another transaction"));
    };
    let claimed_in = Instant::now();
    let first = pop_ids(&q, "pos", 3).await?;
    let claimed_in = claimed_in.elapsed();
    held.release().await?;
    ensure!(
        first == ids[1..4],
        "first claim {first:?}: the locked job was not passed"
    );
    // The engine claims from the head again a second after its last claim from there, or
    // twenty of that claim's durations where it was slow: the wait allows for the slowest
    // claim seen, and 3 s more.
    let bound =
        |slowest: Duration| Duration::from_secs(1).max(slowest * 20) + Duration::from_secs(3);
    let started = Instant::now();
    let mut slowest = claimed_in;
    let mut claimed = first.clone();
    let mut found = false;
    while started.elapsed() < bound(slowest) {
        let t = Instant::now();
        let got = pop(&q, "pos", 1, LONG_LEASE, "w1").await?;
        slowest = slowest.max(t.elapsed());
        ensure!(
            !got.is_empty(),
            "the queue ran dry before the passed job was claimed"
        );
        let id = got[0].job.id;
        ensure!(!claimed.contains(&id), "{id} was claimed twice");
        claimed.push(id);
        if id == ids[0] {
            found = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ensure!(
        found,
        "the passed job was not claimed within {:?} ({} other jobs were, the slowest claim took {slowest:?})",
        bound(slowest),
        claimed.len()
    );
    let j = expect_state(&q, ids[0], JobState::Running).await?;
    ensure!(j.attempts == 1, "attempts {}", j.attempts);
    for id in &claimed {
        expect_state(&q, *id, JobState::Running).await?;
    }
    Ok(())
}

/// A job pushed by a transaction that began before the jobs claimed last but committed after
/// them (it sorts just behind where the claims stopped) is claimed by the next claim, after
/// claims that came back full and after one that came back short.
pub async fn a_job_committed_late_is_claimed_by_the_next_claim(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    if q.capabilities().claim != ClaimStrategy::SkipLocked {
        // Elsewhere the open transaction's write holds back the pushes after it or the claims.
        return Err(ctx.skip("only a claim that skips locked rows passes an uncommitted job"));
    }
    let Some(tx) = fx.transactions() else {
        return Err(ctx.skip("the backend has no transactions of the caller's"));
    };
    let Some((late, held)) = tx.push_held(job("pos", json!("late"))).await? else {
        return Err(ctx.skip("the fixture cannot hold a push's transaction open"));
    };
    let ids = push_n(&q, "pos", 6).await?;
    let mut rest = Vec::new();
    for (limit, want) in [(4, &ids[..4]), (10, &ids[4..])] {
        let got = pop_ids(&q, "pos", limit).await?;
        ensure!(got == want, "claimed {got:?}, expected {want:?}");
        rest.extend(got);
    }
    held.commit().await?;
    let j = expect_state(&q, late, JobState::Pending).await?;
    let first = super::get(&q, ids[0]).await?;
    ensure!(
        j.run_at <= first.run_at,
        "the late job is due at {}, after the first job claimed ({}): it does not sort behind",
        j.run_at,
        first.run_at
    );
    let got = pop_ids(&q, "pos", 10).await?;
    ensure!(
        got == vec![late],
        "the claim after the late commit took {got:?}, expected the late job"
    );
    let j = expect_state(&q, late, JobState::Running).await?;
    ensure!(j.attempts == 1, "attempts {}", j.attempts);
    for id in &rest {
        expect_state(&q, *id, JobState::Running).await?;
    }
    Ok(())
}
