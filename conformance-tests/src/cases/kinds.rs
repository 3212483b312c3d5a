//! Job kinds and what a handler records: one worker routing kinds to their handlers over
//! several queues, per-kind and per-job options, snooze, metadata merged under the lease,
//! recorded output, the history of every failed attempt, and rescheduling a pending job. Each
//! case checks what the database stores.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use queue_core::worker::{JobContext, JobError, Worker};
use queue_core::{
    Error, FailOutcome, Failure, JobArgs, JobId, JobState, KindOptions, ListRequest, NewJob,
    Reschedule, Snooze, SnoozeOutcome, ERRORS_KEPT,
};
use serde_json::{json, Value};

use super::{
    eventually, expect_cancelled, expect_lease_lost, expect_state, get, invalid_field, job, pop,
    pop_one, row_fingerprint, sleep_until_db, LONG_LEASE, SHORT_LEASE,
};
use crate::Ctx;

#[derive(serde::Serialize, serde::Deserialize)]
struct Alpha {
    n: u32,
}

impl JobArgs for Alpha {
    const KIND: &'static str = "alpha";

    fn options() -> KindOptions {
        KindOptions::new().queue("k.a").priority(3).max_attempts(4)
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Beta {
    n: u32,
}

impl JobArgs for Beta {
    const KIND: &'static str = "beta";

    fn options() -> KindOptions {
        KindOptions::new()
            .queue("k.b")
            .timeout(Duration::from_secs(60))
    }
}

fn list(queue: Option<&str>, state: Option<JobState>, kind: Option<&str>) -> ListRequest {
    ListRequest {
        queue: queue.map(str::to_owned),
        state,
        kind: kind.map(str::to_owned),
        limit: 1000,
        before: None,
    }
}

/// A typed push takes its kind's defaults (queue, priority, attempts, timeout); each can be
/// changed at push; an untyped push can name a kind; all of it is stored and read back.
pub async fn kinds_typed_push_takes_the_kinds_defaults(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let a = q.push(NewJob::of(&Alpha { n: 1 })?).await?;
    let j = get(&q, a).await?;
    ensure!(
        j.kind.as_deref() == Some("alpha")
            && j.queue == "k.a"
            && j.priority == 3
            && j.max_attempts == 4
            && j.timeout.is_none()
            && j.payload_value() == json!({"n": 1}),
        "typed push stored {j:?}"
    );
    let b = q
        .push(
            NewJob::of(&Beta { n: 2 })?
                .with_queue("elsewhere")
                .priority(-1)
                .timeout(Duration::from_millis(1500)),
        )
        .await?;
    let j = get(&q, b).await?;
    ensure!(
        j.kind.as_deref() == Some("beta")
            && j.queue == "elsewhere"
            && j.priority == -1
            && j.timeout == Some(Duration::from_millis(1500)),
        "overridden typed push stored {j:?}"
    );
    let b_default = get(&q, q.push(NewJob::of(&Beta { n: 3 })?).await?).await?;
    ensure!(
        b_default.timeout.is_none(),
        "the kind's timeout is the worker's to apply, not stored with its jobs: {:?}",
        b_default.timeout
    );
    let plain = q
        .push(job("k.plain", json!({})).kind("legacy.kind"))
        .await?;
    let untyped = q.push(job("k.plain", json!({}))).await?;
    ensure!(get(&q, plain).await?.kind.as_deref() == Some("legacy.kind"));
    let j = get(&q, untyped).await?;
    ensure!(
        j.kind.is_none()
            && j.meta.is_none()
            && j.snoozes == 0
            && j.errors.is_empty()
            && j.output.is_none(),
        "a plain job has none of the new fields: {j:?}"
    );
    // A claim carries the kind, the metadata and the timeout.
    let claimed = pop_one(&q, "elsewhere").await?;
    ensure!(
        claimed.job.kind.as_deref() == Some("beta")
            && claimed.job.timeout == Some(Duration::from_millis(1500))
            && claimed.job.snoozes == 0,
        "claimed {:?}",
        claimed.job
    );
    Ok(())
}

/// `list` filters by kind, alone and with queue and state.
pub async fn kinds_list_filters_by_kind(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let mut jobs = Vec::new();
    for i in 0..3 {
        jobs.push(NewJob::of(&Alpha { n: i })?);
        jobs.push(NewJob::of(&Beta { n: i })?.with_queue("k.a"));
        jobs.push(job("k.a", json!(i)));
    }
    q.push_batch(jobs).await?;
    pop(&q, "k.a", 2, LONG_LEASE, "w").await?;
    let alphas = q.list(list(None, None, Some("alpha"))).await?;
    ensure!(
        alphas.len() == 3 && alphas.iter().all(|j| j.kind.as_deref() == Some("alpha")),
        "list by kind: {alphas:?}"
    );
    let all = q.list(list(Some("k.a"), None, None)).await?;
    ensure!(all.len() == 9, "{} jobs in k.a", all.len());
    let pending_betas = q
        .list(list(Some("k.a"), Some(JobState::Pending), Some("beta")))
        .await?;
    let running = q
        .list(list(Some("k.a"), Some(JobState::Running), None))
        .await?;
    let running_betas = running
        .iter()
        .filter(|j| j.kind.as_deref() == Some("beta"))
        .count();
    ensure!(
        pending_betas.len() + running_betas == 3
            && pending_betas
                .iter()
                .all(|j| j.kind.as_deref() == Some("beta") && j.state == JobState::Pending),
        "pending betas {pending_betas:?}, running {running:?}"
    );
    ensure!(q.list(list(None, None, Some("nobody"))).await?.is_empty());
    Ok(())
}

/// One worker value serves three queues with concurrency 2, 4 and 1, routing `alpha`, `beta`,
/// a kind registered by name and kindless jobs to their handlers. Each handler marks the job
/// `started` in its metadata when it begins and `finished` before it returns (both under its
/// lease), so the jobs that are running a handler at any moment are visible in the database: a
/// sampler reading it never sees more of a queue's jobs between the two marks than the queue's
/// concurrency. Every job completes once, run by the handler of its kind, with its output.
pub async fn kinds_one_worker_routes_kinds_over_queues(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let observer = fx.another().await?;
    let limits: HashMap<&str, usize> = [("k.a", 2), ("k.b", 4), ("k.c", 1)].into();
    let mut jobs = Vec::new();
    for i in 0..24 {
        jobs.push(NewJob::of(&Alpha { n: i })?);
        jobs.push(NewJob::of(&Beta { n: i })?);
    }
    for i in 0..12 {
        jobs.push(job("k.b", json!({ "i": i })).kind("gamma"));
        jobs.push(job("k.c", json!({ "i": i })));
    }
    let total = jobs.len();
    let ids = q.push_batch(jobs).await?;

    async fn run(ctx: JobContext, by: &str) -> Result<(), JobError> {
        ctx.merge_meta(json!({ "started": true, "by": by })).await?;
        tokio::time::sleep(Duration::from_millis(20 + fastrand::u64(0..40))).await;
        ctx.merge_meta(json!({ "finished": true })).await?;
        ctx.record_output(&json!({ "by": by, "queue": ctx.job.queue }))?;
        Ok(())
    }
    let handle = Worker::builder(q.clone(), "k.a")
        .concurrency(2)
        .queue("k.b", 4)
        .queue("k.c", 1)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .job(|_: Alpha, ctx| run(ctx, "alpha"))
        .job(|_: Beta, ctx| run(ctx, "beta"))
        .kind_fn("gamma", KindOptions::new(), |ctx| run(ctx, "gamma"))
        .handler_fn(|ctx| run(ctx, "default"))
        .build()?
        .start();

    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (observer, stop, limits) = (observer.clone(), stop.clone(), limits.clone());
        tokio::spawn(async move {
            let mut peaks: HashMap<String, usize> = HashMap::new();
            let mut violations = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                for (queue, limit) in &limits {
                    let running = observer
                        .list(list(Some(queue), Some(JobState::Running), None))
                        .await?;
                    let busy = running
                        .iter()
                        .filter(|j| {
                            let m = j.meta_value();
                            m["started"] == json!(true) && m.get("finished").is_none()
                        })
                        .count();
                    let peak = peaks.entry((*queue).to_owned()).or_default();
                    *peak = (*peak).max(busy);
                    if busy > *limit {
                        violations.push(format!("{queue}: {busy} running handlers"));
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            anyhow::Ok((peaks, violations))
        })
    };
    let done = eventually(Duration::from_secs(60), "every job completed", || {
        let q = q.clone();
        async move {
            let completed: u64 = q.stats(None).await?.iter().map(|s| s.completed).sum();
            Ok((completed as usize == total).then_some(()))
        }
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    let report = handle.shutdown(Duration::from_secs(5)).await;
    let (peaks, violations) = sampler.await??;
    done?;
    ensure!(violations.is_empty(), "over concurrency: {violations:?}");
    for queue in limits.keys() {
        ensure!(
            peaks.get(*queue).is_some_and(|p| *p > 0),
            "the sampler never saw a running handler of {queue}: {peaks:?}"
        );
    }
    ensure!(
        report.counters.completed as usize == total && report.all_settled(),
        "{report:?}"
    );
    for id in ids {
        let j = expect_state(&q, id, JobState::Completed).await?;
        let want = j.kind.as_deref().unwrap_or("default");
        let meta = j.meta_value();
        let output = j.output::<Value>()?.unwrap_or_default();
        ensure!(
            j.attempts == 1
                && meta["by"] == json!(want)
                && meta["finished"] == json!(true)
                && output == json!({ "by": want, "queue": j.queue }),
            "job {id} of kind {want} in {}: attempts {}, meta {meta}, output {output}",
            j.queue,
            j.attempts
        );
    }
    Ok(())
}

/// A job whose kind no handler of the worker runs is not lost and does not loop: each attempt
/// fails, by the retry policy (after its backoff), with an error naming the kind, until the
/// attempts are used up; a job without a kind on a worker without a default handler likewise.
pub async fn kinds_unknown_kind_fails_by_the_retry_policy(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let unknown = q
        .push(job("k.u", json!({})).kind("nobody.knows").max_attempts(2))
        .await?;
    let kindless = q.push(job("k.u", json!({})).max_attempts(1)).await?;
    let handle = Worker::builder(q.clone(), "k.u")
        .poll_interval(Duration::from_millis(10), Duration::from_millis(50))
        .job(|_: Alpha, _ctx| async { Ok(()) })
        .build()?
        .start();
    let dead = eventually(Duration::from_secs(15), "both jobs dead", || {
        let q = q.clone();
        async move {
            let a = get(&q, unknown).await?;
            let b = get(&q, kindless).await?;
            Ok((a.state == JobState::Dead && b.state == JobState::Dead).then_some((a, b)))
        }
    })
    .await;
    handle.shutdown(Duration::from_secs(2)).await;
    let (a, b) = dead?;
    ensure!(a.attempts == 2 && a.errors.len() == 2, "{a:?}");
    for e in &a.errors {
        ensure!(
            e.error.contains("\"nobody.knows\"") && e.error.contains("alpha"),
            "the error names the kind and the kinds the worker has: {e:?}"
        );
    }
    let gap = a.errors[1].at - a.errors[0].at;
    ensure!(
        gap >= chrono::Duration::milliseconds(80),
        "the second attempt came {gap} after the first: not by the retry policy's backoff"
    );
    ensure!(
        b.last_error
            .as_deref()
            .unwrap_or_default()
            .contains("no kind"),
        "{b:?}"
    );
    Ok(())
}

/// A kind's timeout stops its handler and fails the attempt; a timeout pushed with a job
/// overrides its kind's, also when it is the longer one.
pub async fn kinds_timeout_per_kind_and_per_job(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let by_kind = q
        .push(job("k.t", json!({})).kind("slow").max_attempts(1))
        .await?;
    let by_job = q
        .push(
            job("k.t", json!({}))
                .kind("slow")
                .max_attempts(1)
                .timeout(Duration::from_millis(600)),
        )
        .await?;
    let started = Instant::now();
    let handle = Worker::builder(q.clone(), "k.t")
        .concurrency(2)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(50))
        .kind_fn(
            "slow",
            KindOptions::new().timeout(Duration::from_millis(200)),
            |_ctx| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(())
            },
        )
        .build()?
        .start();
    let done = eventually(Duration::from_secs(10), "both timed out", || {
        let q = q.clone();
        async move {
            let a = get(&q, by_kind).await?;
            let b = get(&q, by_job).await?;
            Ok((a.state == JobState::Dead && b.state == JobState::Dead).then_some((a, b)))
        }
    })
    .await;
    handle.shutdown(Duration::from_secs(2)).await;
    let (a, b) = done?;
    ensure!(
        started.elapsed() < Duration::from_secs(10),
        "the handlers were not stopped"
    );
    let ea = a.last_error.unwrap_or_default();
    let eb = b.last_error.unwrap_or_default();
    ensure!(ea.contains("timed out after 200ms"), "kind timeout: {ea}");
    ensure!(eb.contains("timed out after 600ms"), "job timeout: {eb}");
    ensure!(a.errors.len() == 1 && b.errors.len() == 1);
    Ok(())
}

/// A snooze puts the job back for later without spending its attempt and counts the snooze;
/// past the bound a snooze is a failed attempt; a stale holder's snooze changes nothing.
pub async fn kinds_snooze_keeps_attempts_and_counts(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();

    // Through a worker: two snoozes, then the job completes on its first attempt.
    let id = q
        .push(job("k.s", json!({})).kind("sleepy").max_attempts(1))
        .await?;
    let handle = Worker::builder(q.clone(), "k.s")
        .poll_interval(Duration::from_millis(10), Duration::from_millis(50))
        .kind_fn("sleepy", KindOptions::new(), |ctx| async move {
            if ctx.job.snoozes < 2 {
                return Err(JobError::snooze(Duration::from_millis(100)));
            }
            Ok(())
        })
        .build()?
        .start();
    let j = eventually(Duration::from_secs(10), "snoozed job completed", || {
        let q = q.clone();
        async move {
            let j = get(&q, id).await?;
            Ok((j.state == JobState::Completed).then_some(j))
        }
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(2)).await;
    let j = j?;
    ensure!(
        j.attempts == 1 && j.snoozes == 2 && j.errors.is_empty() && j.last_error.is_none(),
        "after two snoozes: attempts {}, snoozes {}, errors {:?}",
        j.attempts,
        j.snoozes,
        j.errors
    );
    ensure!(report.counters.snoozed == 2, "{report:?}");

    // Through the API: a snooze is due after its delay, in the database.
    let id = q.push(job("k.s2", json!({})).max_attempts(3)).await?;
    let l = pop_one(&q, "k.s2").await?;
    let out = q
        .snooze(
            &l.lease,
            Snooze::new(Duration::from_secs(3600)).max_snoozes(1),
        )
        .await?;
    ensure!(out == SnoozeOutcome::Snoozed, "{out:?}");
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(
        j.attempts == 0 && j.snoozes == 1 && j.worker.is_none() && j.lease_expires_at.is_none(),
        "{j:?}"
    );
    ensure!(
        j.run_at > q.now().await? + chrono::Duration::minutes(50),
        "not due an hour later: {}",
        j.run_at
    );
    ensure!(pop(&q, "k.s2", 1, LONG_LEASE, "w").await?.is_empty());
    // The stale lease changes nothing.
    let before = row_fingerprint(&j);
    expect_lease_lost(
        "stale snooze",
        id,
        q.snooze(&l.lease, Snooze::new(Duration::ZERO)).await,
    )?;
    ensure!(row_fingerprint(&get(&q, id).await?) == before);
    // Past the bound: the snooze is recorded as a failure (attempt spent, error in history).
    q.reschedule(id, Reschedule::new().now()).await?;
    let l = pop_one(&q, "k.s2").await?;
    let out = q
        .snooze(&l.lease, Snooze::new(Duration::ZERO).max_snoozes(1))
        .await?;
    ensure!(
        matches!(out, SnoozeOutcome::Failed(FailOutcome::Retrying { .. })),
        "{out:?}"
    );
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.attempts == 1 && j.snoozes == 1, "{j:?}");
    let e = j.errors.last().context("a history entry")?;
    ensure!(
        e.error.contains("max_snoozes") && e.attempt == 1,
        "history: {:?}",
        j.errors
    );
    // Bad input changes nothing.
    let l = {
        q.reschedule(id, Reschedule::new().now()).await?;
        pop_one(&q, "k.s2").await?
    };
    let before = row_fingerprint(&get(&q, id).await?);
    let r = q
        .snooze(&l.lease, Snooze::new(Duration::ZERO).max_snoozes(0))
        .await;
    ensure!(invalid_field(&r) == Ok("max_snoozes".into()), "{r:?}");
    ensure!(row_fingerprint(&get(&q, id).await?) == before);
    Ok(())
}

/// Metadata set at push is merged (JSON Merge Patch) by the lease holder; a stale holder gets
/// `LeaseLost` and the stored metadata is unchanged; merges from many tasks of one holder at
/// once all land; a non-object or oversized result is refused and nothing changes.
pub async fn kinds_meta_merged_under_the_lease(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q
        .push(job("k.m", json!({})).meta(&json!({"a": 1, "n": {"x": 1, "y": 1}}))?)
        .await?;
    ensure!(get(&q, id).await?.meta_value() == json!({"a": 1, "n": {"x": 1, "y": 1}}));
    // Long enough for the merges below to run before it expires.
    let old = pop(&q, "k.m", 1, Duration::from_secs(2), "old")
        .await?
        .remove(0);
    ensure!(old.job.meta_value()["a"] == json!(1), "claimed meta");
    let merged = q
        .merge_meta(&old.lease, &json!({"n": {"y": null, "z": 2}, "b": [1, 2]}))
        .await?;
    let want = json!({"a": 1, "n": {"x": 1, "z": 2}, "b": [1, 2]});
    ensure!(merged == want, "merge returned {merged}");
    ensure!(get(&q, id).await?.meta_value() == want, "stored meta");

    // The lease expires and another holder takes the job: the old holder's merge is fenced off.
    sleep_until_db(&q, old.lease.expires_at).await?;
    ensure!(q.rescue_expired().await? == 1);
    let new = pop(&q, "k.m", 1, LONG_LEASE, "new").await?.remove(0);
    expect_lease_lost(
        "stale merge",
        id,
        q.merge_meta(&old.lease, &json!({"stale": true})).await,
    )?;
    ensure!(
        get(&q, id).await?.meta_value() == want,
        "a stale merge landed"
    );

    // Sixteen merges of one holder at once: none is lost.
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let (q, lease) = (q.clone(), new.lease.clone());
            tokio::spawn(async move { q.merge_meta(&lease, &json!({ format!("k{i}"): i })).await })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    let m = get(&q, id).await?.meta_value();
    for i in 0..16 {
        ensure!(m[format!("k{i}")] == json!(i), "merge {i} was lost: {m}");
    }

    // Bad merges change nothing.
    let before = get(&q, id).await?.meta_value();
    let r = q.merge_meta(&new.lease, &json!([1, 2])).await;
    ensure!(invalid_field(&r) == Ok("meta".into()), "{r:?}");
    let big = "x".repeat(q.capabilities().limits.max_meta_bytes);
    let r = q.merge_meta(&new.lease, &json!({ "big": big })).await;
    ensure!(invalid_field(&r) == Ok("meta".into()), "{r:?}");
    ensure!(get(&q, id).await?.meta_value() == before);

    // A cancelled job's holder learns of it.
    q.cancel(id).await?;
    expect_cancelled(
        "merge after cancel",
        id,
        q.merge_meta(&new.lease, &json!({"late": 1})).await,
    )?;
    ensure!(get(&q, id).await?.meta_value() == before);
    Ok(())
}

/// An output is stored with the completion and returned by `get`; one past the limit is
/// refused and the job stays running; a stale holder's output is not stored.
pub async fn kinds_output_stored_and_bounded(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let id = q.push(job("k.o", json!({}))).await?;
    let l = pop_one(&q, "k.o").await?;
    let limit = q.capabilities().limits.max_output_bytes;
    let big = serde_json::value::to_raw_value(&"o".repeat(limit))?;
    let r = q.ack_with_output(&l.lease, &big).await;
    ensure!(invalid_field(&r) == Ok("output".into()), "{r:?}");
    let j = expect_state(&q, id, JobState::Running).await?;
    ensure!(j.output.is_none());
    let out = serde_json::value::to_raw_value(&json!({"rows": 3, "note": "ok"}))?;
    q.ack_with_output(&l.lease, &out).await?;
    let j = expect_state(&q, id, JobState::Completed).await?;
    ensure!(
        j.output::<Value>()? == Some(json!({"rows": 3, "note": "ok"})),
        "stored output {:?}",
        j.output
    );
    // The same lease again: LeaseLost, the stored output unchanged.
    let other = serde_json::value::to_raw_value(&json!("other"))?;
    expect_lease_lost(
        "second completion",
        id,
        q.ack_with_output(&l.lease, &other).await,
    )?;
    ensure!(get(&q, id).await?.output::<Value>()? == Some(json!({"rows": 3, "note": "ok"})));
    // A plain ack stores none.
    let id = q.push(job("k.o", json!({}))).await?;
    q.ack(&pop_one(&q, "k.o").await?.lease).await?;
    ensure!(expect_state(&q, id, JobState::Completed)
        .await?
        .output
        .is_none());
    Ok(())
}

/// Every failure appends {attempt, at, error, worker} to the job's history, oldest first, and
/// only the newest entries are kept; `last_error` is the newest; a rescue adds its entry too.
pub async fn kinds_attempt_history_in_order_and_bounded(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let kept = ERRORS_KEPT as usize;
    let failures = kept + 5;
    let id = q
        .push(job("k.h", json!({})).max_attempts(failures as u32 + 5))
        .await?;
    for i in 1..=failures {
        let l = pop(&q, "k.h", 1, LONG_LEASE, &format!("w{i}"))
            .await?
            .pop()
            .with_context(|| format!("attempt {i}"))?;
        ensure!(l.lease.attempt == i as u32);
        q.fail(
            &l.lease,
            Failure::retry_after(format!("e{i}"), Duration::ZERO),
        )
        .await?;
    }
    let j = get(&q, id).await?;
    ensure!(j.errors.len() == kept, "{} entries kept", j.errors.len());
    for (k, e) in j.errors.iter().enumerate() {
        let attempt = failures - kept + 1 + k;
        ensure!(
            e.attempt == attempt as u32
                && e.error == format!("e{attempt}")
                && e.worker.as_deref() == Some(format!("w{attempt}").as_str()),
            "entry {k}: {e:?}"
        );
    }
    ensure!(
        j.errors.windows(2).all(|w| w[0].at <= w[1].at),
        "entries are not in time order"
    );
    let now = q.now().await?;
    let newest = j.errors.last().context("newest")?;
    ensure!(
        (now - newest.at).num_seconds().abs() < 60,
        "the entry's time {} is not the database's now {now}",
        newest.at
    );
    ensure!(j.last_error.as_deref() == Some(format!("e{failures}").as_str()));

    // A rescue appends "lease expired" with the attempt and worker whose lease ran out.
    let l = pop(&q, "k.h", 1, SHORT_LEASE, "crashed").await?.remove(0);
    sleep_until_db(&q, l.lease.expires_at).await?;
    ensure!(q.rescue_expired().await? == 1);
    let j = get(&q, id).await?;
    let e = j.errors.last().context("rescue entry")?;
    ensure!(
        j.errors.len() == kept
            && e.error == "lease expired"
            && e.attempt == failures as u32 + 1
            && e.worker.as_deref() == Some("crashed"),
        "after the rescue: {:?}",
        j.errors
    );
    // A permanent failure ends it: dead, its entry last.
    let l = pop_one(&q, "k.h").await?;
    q.fail(&l.lease, Failure::permanent("final")).await?;
    let j = expect_state(&q, id, JobState::Dead).await?;
    ensure!(j.errors.len() == kept && j.errors.last().map(|e| e.error.as_str()) == Some("final"));
    // Retry keeps the history, resets attempts and snoozes.
    q.retry(id).await?;
    let j = expect_state(&q, id, JobState::Pending).await?;
    ensure!(j.attempts == 0 && j.snoozes == 0 && j.errors.len() == kept);
    Ok(())
}

/// A pending job's run time and priority can be changed; a job in any other state is refused
/// with `InvalidState`, an unknown one with `NotFound`, an empty change with `InvalidInput`.
pub async fn kinds_reschedule_pending_only(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let late = q
        .push(job("k.r", json!("late")).delay(Duration::from_secs(3600)))
        .await?;
    let first = q.push(job("k.r", json!("first")).priority(5)).await?;
    ensure!(pop(&q, "k.r", 1, LONG_LEASE, "w").await?[0].job.id == first);
    q.reschedule(late, Reschedule::new().now().priority(9))
        .await?;
    let j = expect_state(&q, late, JobState::Pending).await?;
    ensure!(j.priority == 9 && j.run_at <= q.now().await?, "{j:?}");
    let got = pop_one(&q, "k.r").await?;
    ensure!(got.job.id == late && got.job.priority == 9);
    // Push back a due job by an hour: it is no longer given out.
    let due = q.push(job("k.r", json!("due"))).await?;
    q.reschedule(due, Reschedule::new().delay(Duration::from_secs(3600)))
        .await?;
    ensure!(pop(&q, "k.r", 5, LONG_LEASE, "w").await?.is_empty());
    let j = get(&q, due).await?;
    ensure!(j.run_at > q.now().await? + chrono::Duration::minutes(50) && j.priority == 0);
    // Only the priority: the run time stays.
    q.reschedule(due, Reschedule::new().priority(-2)).await?;
    let k = get(&q, due).await?;
    ensure!(k.priority == -2 && k.run_at == j.run_at, "{k:?}");
    // Refusals change nothing.
    let running = got.job.id;
    let before = row_fingerprint(&get(&q, running).await?);
    match q.reschedule(running, Reschedule::new().now()).await {
        Err(Error::InvalidState { job, state, .. })
            if job == running && state == JobState::Running => {}
        other => bail!("reschedule of a running job: {other:?}"),
    }
    ensure!(row_fingerprint(&get(&q, running).await?) == before);
    q.ack(&got.lease).await?;
    match q.reschedule(running, Reschedule::new().priority(1)).await {
        Err(Error::InvalidState {
            state: JobState::Completed,
            ..
        }) => {}
        other => bail!("reschedule of a completed job: {other:?}"),
    }
    let unknown = JobId::new();
    match q.reschedule(unknown, Reschedule::new().now()).await {
        Err(Error::NotFound { job }) if job == unknown => {}
        other => bail!("reschedule of an unknown job: {other:?}"),
    }
    let r = q.reschedule(due, Reschedule::new()).await;
    ensure!(invalid_field(&r) == Ok("reschedule".into()), "{r:?}");
    let r = q
        .reschedule(
            due,
            Reschedule::new().delay(Duration::from_secs(20 * 365 * 24 * 3600)),
        )
        .await;
    ensure!(invalid_field(&r) == Ok("delay".into()), "{r:?}");
    ensure!(get(&q, due).await?.priority == -2);
    Ok(())
}

/// Bad kinds, metadata, timeouts and outputs are refused naming the field; nothing is stored.
pub async fn kinds_bad_input_stores_nothing(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let big_meta = json!({ "x": "m".repeat(q.capabilities().limits.max_meta_bytes) });
    let cases: Vec<(&str, NewJob)> = vec![
        ("kind", job("k.bad", json!(1)).kind("")),
        ("kind", job("k.bad", json!(1)).kind("has space")),
        ("kind", job("k.bad", json!(1)).kind("k".repeat(129))),
        ("meta", job("k.bad", json!(1)).meta(&big_meta)?),
        ("timeout", job("k.bad", json!(1)).timeout(Duration::ZERO)),
        (
            "timeout",
            job("k.bad", json!(1)).timeout(Duration::from_secs(2 * 24 * 3600)),
        ),
    ];
    for (field, bad) in cases {
        let r = q.push(bad).await;
        ensure!(invalid_field(&r) == Ok(field.into()), "push: {r:?}");
    }
    let r = q
        .push_batch(vec![
            job("k.bad", json!(1)).kind("fine"),
            job("k.bad", json!(2)).kind("not fine!"),
        ])
        .await;
    ensure!(
        invalid_field(&r) == Ok("jobs[1].kind".into()),
        "batch: {r:?}"
    );
    match job("k.bad", json!(1)).meta(&json!([1])) {
        Err(Error::InvalidInput { field, .. }) if field == "meta" => {}
        other => bail!("a meta that is not an object: {other:?}"),
    }
    let r = q.list(list(None, None, Some("bad kind"))).await;
    ensure!(invalid_field(&r) == Ok("kind".into()), "list: {r:?}");
    let s = q.stats(Some("k.bad")).await?;
    ensure!(
        s.iter().all(|s| s.available + s.scheduled == 0),
        "something was stored: {s:?}"
    );
    Ok(())
}

/// A database made by the previous release's migrations, with a job in every state written as
/// that release wrote them, is migrated forward: every job reads back as before (no kind, no
/// metadata, history or output), and every job that can run again does, through a worker, as
/// does a workflow pushed after the migration.
pub async fn kinds_previous_release_migrates_and_its_jobs_run(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.unmigrated_fixture().await?;
    let Some(seeded) = fx.seed_previous_release().await? else {
        return Err(ctx.skip("this backend cannot make its previous release's schema"));
    };
    let q = fx.queue();
    // The seeded schema is the previous one: reading a job needs the new columns.
    ensure!(
        q.get(seeded[0].0).await.is_err(),
        "a job reads back before the migration: the seed made the new schema"
    );
    q.migrate().await?;
    let by_state = |s: JobState| -> anyhow::Result<JobId> {
        seeded
            .iter()
            .find(|(_, st)| *st == s)
            .map(|(id, _)| *id)
            .with_context(|| format!("no seeded {s} job"))
    };
    for (id, state) in &seeded {
        let j = get(&q, *id).await?;
        ensure!(
            j.state == *state
                && j.kind.is_none()
                && j.meta.is_none()
                && j.snoozes == 0
                && j.errors.is_empty()
                && j.output.is_none()
                && j.timeout.is_none(),
            "seeded {state} job reads back as {j:?}"
        );
    }
    // The running job's lease has expired: the rescue takes it back.
    ensure!(
        q.rescue_expired().await? == 1,
        "the expired lease was not rescued"
    );
    q.retry(by_state(JobState::Dead)?).await?;
    q.retry(by_state(JobState::Cancelled)?).await?;
    let fresh = q
        .push(NewJob::of(&Alpha { n: 9 })?.with_queue("legacy"))
        .await?;
    let handle = Worker::builder(q.clone(), "legacy")
        .poll_interval(Duration::from_millis(10), Duration::from_millis(50))
        .job(|_: Alpha, ctx| async move {
            ctx.record_output(&"new")?;
            Ok(())
        })
        .handler_fn(|ctx: JobContext| async move {
            ctx.merge_meta(json!({"ran": true})).await?;
            Ok(())
        })
        .build()?
        .start();
    // The migrated table takes workflows: a diamond, run by the same worker.
    let diamond = q
        .push_workflow(
            queue_core::Workflow::new()
                .add("a", NewJob::new("legacy", &json!("a"))?)
                .add_after("b", NewJob::new("legacy", &json!("b"))?, ["a"])
                .add_after("c", NewJob::new("legacy", &json!("c"))?, ["a"])
                .add_after("d", NewJob::new("legacy", &json!("d"))?, ["b", "c"]),
        )
        .await?;
    let run: Vec<JobId> = seeded
        .iter()
        .filter(|(_, s)| *s != JobState::Completed)
        .map(|(id, _)| *id)
        .chain(diamond.jobs.iter().map(|(_, id)| *id))
        .chain([fresh])
        .collect();
    let done = eventually(Duration::from_secs(15), "every job ran", || {
        let (q, run) = (q.clone(), run.clone());
        async move {
            for id in &run {
                if get(&q, *id).await?.state != JobState::Completed {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        }
    })
    .await;
    handle.shutdown(Duration::from_secs(2)).await;
    done?;
    for id in &run[..run.len() - 1] {
        let j = get(&q, *id).await?;
        ensure!(j.meta_value() == json!({"ran": true}), "{j:?}");
    }
    ensure!(get(&q, fresh).await?.output::<String>()? == Some("new".into()));
    let rescued = get(&q, by_state(JobState::Running)?).await?;
    ensure!(
        rescued.errors.first().map(|e| e.error.as_str()) == Some("lease expired"),
        "{:?}",
        rescued.errors
    );
    let keep = get(&q, by_state(JobState::Completed)?).await?;
    ensure!(keep.state == JobState::Completed && keep.attempts == 1);
    let dead = get(&q, by_state(JobState::Dead)?).await?;
    ensure!(
        dead.last_error.as_deref() == Some("boom"),
        "the old last_error is kept: {dead:?}"
    );
    for (id, _) in &seeded {
        expect_state(&q, *id, JobState::Completed).await?;
    }
    // The migrated table takes unique jobs; the old rows hold no key.
    let rule = queue_core::Unique::new().by_args();
    let first = q
        .push_outcome(
            NewJob::of(&Alpha { n: 1 })?
                .with_queue("legacy")
                .unique(rule.clone()),
        )
        .await?;
    let again = q
        .push_outcome(
            NewJob::of(&Alpha { n: 1 })?
                .with_queue("legacy")
                .unique(rule),
        )
        .await?;
    ensure!(
        first.inserted() && !again.inserted() && again.id() == first.id(),
        "unique pushes after the migration: {first:?} then {again:?}"
    );
    Ok(())
}
