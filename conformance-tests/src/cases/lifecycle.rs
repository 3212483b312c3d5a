//! Ack, fail, retry, release and cancel: every transition and what it stores.

use std::time::Duration;

use anyhow::{bail, ensure};
use queue_core::{Error, FailOutcome, Failure, JobState, NewJob, RetryPolicy};
use serde_json::json;

use super::{
    expect_cancelled, expect_lease_lost, expect_state, get, job, pop, pop_one, row_fingerprint,
    sleep_until_db, LONG_LEASE,
};
use crate::Ctx;

/// Ack completes the job (finished_at set, lease cleared) and it is never delivered again.
pub async fn ack_completes_and_never_returns(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("ack", json!("x"))).await?;
    let l = pop_one(&q, "ack").await?;
    q.ack(&l.lease).await?;
    let j = expect_state(&q, id, JobState::Completed).await?;
    ensure!(
        j.finished_at.is_some(),
        "a completed job has no finished_at"
    );
    ensure!(
        j.lease_expires_at.is_none(),
        "a completed job kept its lease expiry"
    );
    ensure!(j.attempts == 1);
    ensure!(
        pop(&q, "ack", 10, LONG_LEASE, "w1").await?.is_empty(),
        "a completed job was delivered again"
    );
    ensure!(q.rescue_expired().await? == 0);
    // A second ack with the same lease changes nothing.
    let before = row_fingerprint(&get(&q, id).await?);
    expect_lease_lost("second ack", id, q.ack(&l.lease).await)?;
    ensure!(
        row_fingerprint(&get(&q, id).await?) == before,
        "a second ack changed the row"
    );
    let s = &q.stats(Some("ack")).await?[0];
    ensure!(
        s.completed == 1 && s.running == 0 && s.available == 0,
        "{s:?}"
    );
    Ok(())
}

/// `ack_batch` completes many jobs in one call and skips leases that were lost.
pub async fn ack_batch_skips_lost_leases(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    // Two jobs whose leases will be lost, then three held for long.
    q.push_batch(vec![
        job("ab", json!(0)).priority(1),
        job("ab", json!(1)).priority(1),
    ])
    .await?;
    let short = pop(&q, "ab", 2, Duration::from_millis(200), "w1").await?;
    ensure!(short.len() == 2);
    q.push_batch((2..5).map(|i| job("ab", json!(i))).collect())
        .await?;
    let long = pop(&q, "ab", 3, LONG_LEASE, "w1").await?;
    ensure!(long.len() == 3);
    for l in &short {
        sleep_until_db(&q, l.lease.expires_at).await?;
    }
    ensure!(
        q.rescue_expired().await? == 2,
        "expected the two short leases to be rescued"
    );
    let again = pop(&q, "ab", 2, LONG_LEASE, "w2").await?;
    ensure!(again.len() == 2);
    let mut leases: Vec<_> = short.iter().map(|l| l.lease.clone()).collect();
    leases.extend(long.iter().map(|l| l.lease.clone()));
    let done = q.ack_batch(&leases).await?;
    ensure!(
        done == 3,
        "ack_batch completed {done}, expected the 3 live leases"
    );
    for l in &long {
        expect_state(&q, l.job.id, JobState::Completed).await?;
    }
    for l in &again {
        let j = expect_state(&q, l.job.id, JobState::Running).await?;
        ensure!(
            j.worker.as_deref() == Some("w2") && j.attempts == 2,
            "{j:?}"
        );
    }
    let again_leases: Vec<_> = again.iter().map(|l| l.lease.clone()).collect();
    ensure!(q.ack_batch(&again_leases).await? == 2);
    ensure!(
        q.ack_batch(&again_leases).await? == 0,
        "acking completed jobs again counted"
    );
    ensure!(q.ack_batch(&[]).await? == 0);
    let s = &q.stats(Some("ab")).await?[0];
    ensure!(s.completed == 5 && s.running == 0, "{s:?}");
    Ok(())
}

/// A failure with attempts left goes back to pending after the policy's backoff (within the
/// jitter), counts the attempt, records the error, and is delivered again after the backoff.
pub async fn fail_reschedules_by_backoff(ctx: Ctx) -> anyhow::Result<()> {
    let mut cfg = ctx.config();
    cfg.retry = RetryPolicy {
        base: Duration::from_millis(3_000),
        factor: 2.0,
        max: Duration::from_secs(20),
        jitter: 0.1,
    };
    let fx = ctx.fixture_with(cfg.clone()).await?;
    let q = fx.queue();
    let id = q.push(job("retry", json!("x")).max_attempts(3)).await?;
    let l = pop_one(&q, "retry").await?;
    let before = q.now().await?;
    let outcome = q.fail(&l.lease, Failure::retryable("smtp timeout")).await?;
    let after = q.now().await?;
    let backoff = match outcome {
        FailOutcome::Retrying { after } => after,
        FailOutcome::Dead => bail!("a failure with 2 attempts left went dead"),
    };
    let nominal = cfg.retry.backoff(1).as_secs_f64();
    ensure!(
        (nominal * 0.9 - 0.001..=nominal * 1.1 + 0.001).contains(&backoff.as_secs_f64()),
        "backoff {backoff:?} outside 3 s ± 10 %"
    );
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.attempts == 1, "attempts stored {}", j.attempts);
    ensure!(
        j.last_error.as_deref() == Some("smtp timeout"),
        "last_error {:?}",
        j.last_error
    );
    ensure!(
        j.lease_expires_at.is_none(),
        "a rescheduled job kept its lease expiry"
    );
    let slack = q.capabilities().time_precision + Duration::from_millis(5);
    let lo = before + chrono::Duration::from_std(Duration::from_secs_f64(nominal * 0.9))?
        - chrono::Duration::from_std(slack)?;
    let hi = after
        + chrono::Duration::from_std(Duration::from_secs_f64(nominal * 1.1))?
        + chrono::Duration::from_std(slack)?;
    ensure!(
        j.run_at >= lo && j.run_at <= hi,
        "run_at {} not within [{lo}, {hi}]",
        j.run_at
    );
    ensure!(
        pop(&q, "retry", 1, LONG_LEASE, "w1").await?.is_empty(),
        "a backing-off job was delivered early"
    );
    let s = &q.stats(Some("retry")).await?[0];
    ensure!(s.scheduled == 1 && s.available == 0, "{s:?}");
    sleep_until_db(&q, j.run_at).await?;
    let l2 = pop_one(&q, "retry").await?;
    ensure!(
        l2.job.id == id && l2.lease.attempt == 2,
        "redelivered as attempt {}",
        l2.lease.attempt
    );
    ensure!(
        l2.lease.token != l.lease.token,
        "the lease token was reused"
    );
    // An explicit retry-after is honoured.
    let before = q.now().await?;
    let outcome = q
        .fail(
            &l2.lease,
            Failure::retry_after("rate limited", Duration::from_secs(60)),
        )
        .await?;
    ensure!(
        outcome
            == FailOutcome::Retrying {
                after: Duration::from_secs(60)
            },
        "{outcome:?}"
    );
    let j = expect_state(&q, id, JobState::Pending).await?;
    let ahead = (j.run_at - before).num_milliseconds();
    ensure!(
        (59_000..=61_000).contains(&ahead),
        "run_at {ahead} ms ahead, expected 60 s"
    );
    Ok(())
}

/// A failure on the last attempt makes the job dead.
pub async fn fail_after_max_attempts_goes_dead(ctx: Ctx) -> anyhow::Result<()> {
    let mut cfg = ctx.config();
    cfg.retry.base = Duration::from_millis(20);
    cfg.retry.max = Duration::from_millis(50);
    let fx = ctx.fixture_with(cfg).await?;
    let q = fx.queue();
    let id = q.push(job("dies", json!("x")).max_attempts(2)).await?;
    let l = pop_one(&q, "dies").await?;
    ensure!(matches!(
        q.fail(&l.lease, Failure::retryable("first")).await?,
        FailOutcome::Retrying { .. }
    ));
    let j = expect_state(&q, id, JobState::Pending).await?;
    sleep_until_db(&q, j.run_at).await?;
    let l = pop_one(&q, "dies").await?;
    ensure!(l.lease.attempt == 2);
    let outcome = q.fail(&l.lease, Failure::retryable("second")).await?;
    ensure!(
        outcome == FailOutcome::Dead,
        "the last attempt's failure returned {outcome:?}"
    );
    let j = expect_state(&q, id, JobState::Dead).await?;
    ensure!(
        j.attempts == 2 && j.last_error.as_deref() == Some("second"),
        "{j:?}"
    );
    ensure!(
        j.finished_at.is_some() && j.lease_expires_at.is_none(),
        "{j:?}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    ensure!(
        pop(&q, "dies", 1, LONG_LEASE, "w1").await?.is_empty(),
        "a dead job was delivered"
    );
    ensure!(q.stats(Some("dies")).await?[0].dead == 1);
    Ok(())
}

/// A permanent failure makes the job dead at once, attempts left or not; the stored error is
/// bounded in length.
pub async fn permanent_failure_goes_dead(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("perm", json!("x")).max_attempts(10)).await?;
    let l = pop_one(&q, "perm").await?;
    let huge = "é".repeat(10_000);
    let outcome = q.fail(&l.lease, Failure::permanent(huge.clone())).await?;
    ensure!(outcome == FailOutcome::Dead, "{outcome:?}");
    let j = expect_state(&q, id, JobState::Dead).await?;
    ensure!(j.attempts == 1 && j.finished_at.is_some(), "{j:?}");
    let stored = j.last_error.unwrap_or_default();
    ensure!(
        stored.chars().count() == queue_core::validate::MAX_ERROR_CHARS
            && huge.starts_with(&stored),
        "last_error stored {} chars, expected the first {}",
        stored.chars().count(),
        queue_core::validate::MAX_ERROR_CHARS
    );
    ensure!(pop(&q, "perm", 1, LONG_LEASE, "w1").await?.is_empty());
    Ok(())
}

/// `retry` brings a dead job back: pending, attempts reset, due now, poppable; it refuses jobs
/// that are not dead or cancelled.
pub async fn retry_brings_dead_back(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("redrive", json!("x")).max_attempts(3)).await?;
    let l = pop_one(&q, "redrive").await?;
    q.fail(&l.lease, Failure::permanent("bad")).await?;
    expect_state(&q, id, JobState::Dead).await?;
    q.retry(id).await?;
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.attempts == 0, "attempts after retry: {}", j.attempts);
    ensure!(
        j.finished_at.is_none() && j.lease_expires_at.is_none(),
        "{j:?}"
    );
    ensure!(j.run_at <= q.now().await?, "a retried job is not due now");
    // Retrying a pending job is refused and changes nothing.
    let before = row_fingerprint(&j);
    match q.retry(id).await {
        Err(Error::InvalidState {
            operation: "retry",
            state: JobState::Pending,
            job,
        }) if job == id => {}
        other => bail!("retry of a pending job: {other:?}"),
    }
    ensure!(row_fingerprint(&get(&q, id).await?) == before);
    let l = pop_one(&q, "redrive").await?;
    ensure!(
        l.job.id == id && l.lease.attempt == 1,
        "attempt {}",
        l.lease.attempt
    );
    // Running and completed jobs cannot be retried either.
    match q.retry(id).await {
        Err(Error::InvalidState {
            operation: "retry",
            state: JobState::Running,
            ..
        }) => {}
        other => bail!("retry of a running job: {other:?}"),
    }
    q.ack(&l.lease).await?;
    match q.retry(id).await {
        Err(Error::InvalidState {
            operation: "retry",
            state: JobState::Completed,
            ..
        }) => {}
        other => bail!("retry of a completed job: {other:?}"),
    }
    expect_state(&q, id, JobState::Completed).await?;
    Ok(())
}

/// `release` returns the job to pending, due now, without counting the attempt.
pub async fn release_does_not_consume_attempt(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("rel", json!("x")).max_attempts(1)).await?;
    let l = pop_one(&q, "rel").await?;
    ensure!(l.lease.attempt == 1);
    q.release(&l.lease).await?;
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.attempts == 0, "attempts after release: {}", j.attempts);
    ensure!(
        j.lease_expires_at.is_none(),
        "a released job kept its lease expiry"
    );
    ensure!(j.run_at <= q.now().await?, "a released job is not due now");
    expect_lease_lost("second release", id, q.release(&l.lease).await)?;
    // With max_attempts 1, the job still gets its one real attempt.
    let l2 = pop_one(&q, "rel").await?;
    ensure!(l2.lease.attempt == 1 && l2.job.id == id);
    ensure!(q.fail(&l2.lease, Failure::retryable("x")).await? == FailOutcome::Dead);
    expect_state(&q, id, JobState::Dead).await?;
    Ok(())
}

/// Cancelling a pending job: cancelled, finished, never delivered.
pub async fn cancel_pending(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("cx", json!("x"))).await?;
    let other = q.push(job("cx", json!("y"))).await?;
    q.cancel(id).await?;
    let j = expect_state(&q, id, JobState::Cancelled).await?;
    ensure!(j.finished_at.is_some());
    let l = pop_one(&q, "cx").await?;
    ensure!(l.job.id == other, "popped the cancelled job");
    ensure!(pop(&q, "cx", 10, LONG_LEASE, "w1").await?.is_empty());
    let s = &q.stats(Some("cx")).await?[0];
    ensure!(s.cancelled == 1 && s.running == 1, "{s:?}");
    // A cancelled job can be brought back.
    q.retry(id).await?;
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.attempts == 0 && j.finished_at.is_none());
    Ok(())
}

/// Cancelling a running job: cancelled at once; its holder's ack, fail, extend and release
/// report `Cancelled` and change nothing; the rescuer leaves it alone.
pub async fn cancel_running_reports_cancelled(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("cr", json!("x"))).await?;
    let l = pop(&q, "cr", 1, Duration::from_millis(300), "w1")
        .await?
        .remove(0);
    q.cancel(id).await?;
    let j = expect_state(&q, id, JobState::Cancelled).await?;
    ensure!(j.finished_at.is_some());
    let before = row_fingerprint(&j);
    expect_cancelled("ack", id, q.ack(&l.lease).await)?;
    expect_cancelled("fail", id, q.fail(&l.lease, Failure::retryable("x")).await)?;
    expect_cancelled(
        "extend",
        id,
        q.extend(&l.lease, Duration::from_secs(5)).await,
    )?;
    expect_cancelled("release", id, q.release(&l.lease).await)?;
    ensure!(
        row_fingerprint(&get(&q, id).await?) == before,
        "a cancelled holder changed the row"
    );
    sleep_until_db(&q, l.lease.expires_at).await?;
    ensure!(
        q.rescue_expired().await? == 0,
        "the rescuer touched a cancelled job"
    );
    expect_state(&q, id, JobState::Cancelled).await?;
    ensure!(q.ack_batch(std::slice::from_ref(&l.lease)).await? == 0);
    expect_state(&q, id, JobState::Cancelled).await?;
    Ok(())
}

/// Cancelling a finished job is `InvalidState` and changes nothing.
pub async fn cancel_finished_is_invalid_state(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let done = q.push(job("cf", json!(1))).await?;
    let l = pop_one(&q, "cf").await?;
    q.ack(&l.lease).await?;
    let dead = q.push(job("cf", json!(2))).await?;
    let l = pop_one(&q, "cf").await?;
    q.fail(&l.lease, Failure::permanent("x")).await?;
    let cancelled = q.push(job("cf", json!(3))).await?;
    q.cancel(cancelled).await?;
    for (id, state) in [
        (done, JobState::Completed),
        (dead, JobState::Dead),
        (cancelled, JobState::Cancelled),
    ] {
        let before = row_fingerprint(&get(&q, id).await?);
        match q.cancel(id).await {
            Err(Error::InvalidState {
                job,
                state: s,
                operation: "cancel",
            }) if job == id && s == state => {}
            other => bail!("cancel of a {state} job: {other:?}"),
        }
        ensure!(
            row_fingerprint(&get(&q, id).await?) == before,
            "cancel changed a {state} job"
        );
    }
    Ok(())
}

/// `cancel` and `retry` of an unknown id are `NotFound`.
pub async fn unknown_id_not_found(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    q.push(job("nf", json!(1))).await?;
    let unknown = NewJob::new("nf", &1)?.id();
    match q.cancel(unknown).await {
        Err(Error::NotFound { job }) if job == unknown => {}
        other => bail!("cancel of an unknown id: {other:?}"),
    }
    match q.retry(unknown).await {
        Err(Error::NotFound { job }) if job == unknown => {}
        other => bail!("retry of an unknown id: {other:?}"),
    }
    ensure!(
        q.get(unknown).await?.is_none(),
        "a NotFound call created a row"
    );
    ensure!(super::all_jobs(&q).await?.len() == 1);
    Ok(())
}

/// `worker` names the holder while a job runs, stays on a finished job (who finished it), and
/// is cleared whenever the job goes back to pending (failure with a retry, release, rescue,
/// retry of a dead job), because nobody holds it then.
pub async fn worker_is_cleared_when_back_to_pending(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let expect_worker = |what: &str, j: &queue_core::Job, w: Option<&str>| {
        ensure!(
            j.worker.as_deref() == w,
            "{what}: worker {:?}, expected {w:?}",
            j.worker
        );
        Ok(())
    };
    let id = q.push(job("who", json!(1)).max_attempts(5)).await?;
    let l = pop(&q, "who", 1, LONG_LEASE, "w-fail").await?.remove(0);
    expect_worker("running", &get(&q, id).await?, Some("w-fail"))?;
    q.fail(&l.lease, Failure::retry_after("again", Duration::ZERO))
        .await?;
    expect_worker(
        "failed, retrying",
        &expect_state(&q, id, JobState::Pending).await?,
        None,
    )?;

    let l = pop(&q, "who", 1, LONG_LEASE, "w-release").await?.remove(0);
    q.release(&l.lease).await?;
    expect_worker(
        "released",
        &expect_state(&q, id, JobState::Pending).await?,
        None,
    )?;

    let l = pop(&q, "who", 1, Duration::from_millis(200), "w-expire")
        .await?
        .remove(0);
    sleep_until_db(&q, l.lease.expires_at).await?;
    ensure!(q.rescue_expired().await? == 1);
    expect_worker(
        "rescued",
        &expect_state(&q, id, JobState::Pending).await?,
        None,
    )?;

    let l = pop(&q, "who", 1, LONG_LEASE, "w-dead").await?.remove(0);
    q.fail(&l.lease, Failure::permanent("no")).await?;
    expect_worker(
        "dead",
        &expect_state(&q, id, JobState::Dead).await?,
        Some("w-dead"),
    )?;
    q.retry(id).await?;
    expect_worker(
        "retried",
        &expect_state(&q, id, JobState::Pending).await?,
        None,
    )?;

    let l = pop(&q, "who", 1, LONG_LEASE, "w-done").await?.remove(0);
    q.ack(&l.lease).await?;
    expect_worker(
        "completed",
        &expect_state(&q, id, JobState::Completed).await?,
        Some("w-done"),
    )?;
    Ok(())
}

/// A failure's message is stored as text every backend can hold: cut to 4,096 characters,
/// with NUL replaced by U+FFFD; the failure is recorded, never refused.
pub async fn failure_message_is_always_stored(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("msg", json!(1)).max_attempts(5)).await?;
    let l = pop_one(&q, "msg").await?;
    q.fail(
        &l.lease,
        Failure::retry_after("bad byte \0 here", Duration::ZERO),
    )
    .await?;
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(
        j.last_error.as_deref() == Some("bad byte \u{FFFD} here"),
        "{:?}",
        j.last_error
    );
    let l = pop_one(&q, "msg").await?;
    let long = "é".repeat(5000);
    q.fail(&l.lease, Failure::permanent(long)).await?;
    let j = expect_state(&q, id, JobState::Dead).await?;
    let stored = j.last_error.unwrap_or_default();
    ensure!(
        stored.chars().count() == 4096 && stored.chars().all(|c| c == 'é'),
        "stored {} characters",
        stored.chars().count()
    );
    Ok(())
}

/// `ack_batch_and_pop` completes the leases that are still current and then claims, as one
/// operation where the backend can: the count excludes lost leases, the claim never returns
/// a job just completed, and an empty queue claims nothing while the completions stand.
pub async fn ack_batch_and_pop_completes_then_claims(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let ids = q
        .push_batch((0..6).map(|i| job("abp", json!(i))).collect())
        .await?;
    let first = pop(&q, "abp", 3, LONG_LEASE, "w").await?;
    ensure!(first.len() == 3);
    // The third lease is lost: its job was cancelled.
    q.cancel(first[2].job.id).await?;
    let leases: Vec<_> = first.iter().map(|l| l.lease.clone()).collect();
    let limits = &q.capabilities().limits;
    let req = queue_core::CheckedPop::new(
        queue_core::PopRequest::new("abp")
            .limit(10)
            .lease(LONG_LEASE)
            .worker("w"),
        limits,
    )?;
    let (acked, claimed) = q.ack_batch_and_pop(&leases, &req).await?;
    let claimed = claimed?;
    ensure!(
        acked == 2,
        "completed {acked}, expected the 2 current leases"
    );
    let claimed_ids: Vec<_> = claimed.iter().map(|l| l.job.id).collect();
    ensure!(claimed_ids == ids[3..].to_vec(), "claimed {claimed_ids:?}");
    for l in &first[..2] {
        expect_state(&q, l.job.id, JobState::Completed).await?;
    }
    expect_state(&q, first[2].job.id, JobState::Cancelled).await?;
    // Nothing left to claim: the completions stand, the claim is empty.
    let leases: Vec<_> = claimed.iter().map(|l| l.lease.clone()).collect();
    let (acked, claimed) = q.ack_batch_and_pop(&leases, &req).await?;
    ensure!(acked == 3 && claimed?.is_empty());
    let s = &q.stats(Some("abp")).await?[0];
    ensure!(
        s.completed == 5 && s.cancelled == 1 && s.running == 0,
        "{s:?}"
    );
    Ok(())
}
