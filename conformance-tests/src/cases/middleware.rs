//! Middleware around the worker's handler runs (`WorkerBuilder::middleware`,
//! `kind_middleware`): their order, a changed outcome as the database stores it, and values a
//! middleware adds to the run's context.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::ensure;
use queue_core::worker::{middleware_fn, JobContext, JobError, Middleware, Worker};
use queue_core::{JobState, KindOptions};
use serde_json::json;

use super::worker::wait_for_stats;
use super::{expect_state, job};
use crate::Ctx;

type Log = Arc<Mutex<Vec<String>>>;

fn note(log: &Log, line: String) {
    log.lock().unwrap_or_else(|e| e.into_inner()).push(line);
}

/// A middleware that notes `name` with the job's id before the run, and the outcome after it.
fn noting(name: &'static str, log: Log) -> impl Middleware {
    middleware_fn(move |ctx: JobContext, next| {
        let log = log.clone();
        async move {
            let id = ctx.id();
            note(&log, format!("{id} {name} before"));
            let outcome = next.run(ctx).await;
            let how = if outcome.is_ok() { "ok" } else { "err" };
            note(&log, format!("{id} {name} after {how}"));
            outcome
        }
    })
}

/// Two middleware on the worker and one on a kind run in the stated order: the first added
/// outermost, the worker's around the kind's, the handler innermost; each sees the outcome.
/// A job of another kind (the default handler) goes through the worker's only.
pub async fn middleware_layers_compose_in_order(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let log: Log = Arc::default();
    let keyed = q.push(job("mwo", json!({})).kind("keyed")).await?;
    let plain = q.push(job("mwo", json!({}))).await?;
    let (l1, l2) = (log.clone(), log.clone());
    let handle = Worker::builder(q.clone(), "mwo")
        .concurrency(2)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .middleware(noting("a", log.clone()))
        .kind_middleware("keyed", noting("k", log.clone()))
        .middleware(noting("b", log.clone()))
        .kind_fn("keyed", KindOptions::new(), move |ctx| {
            let log = l1.clone();
            async move {
                note(&log, format!("{} handler", ctx.id()));
                Ok(())
            }
        })
        .handler_fn(move |ctx: JobContext| {
            let log = l2.clone();
            async move {
                note(&log, format!("{} default", ctx.id()));
                Err(JobError::permanent("the default handler fails"))
            }
        })
        .build()?
        .start();
    let s = wait_for_stats(&q, "mwo", Duration::from_secs(20), |s| {
        s.completed == 1 && s.dead == 1
    })
    .await;
    handle.shutdown(Duration::from_secs(2)).await;
    s?;
    expect_state(&q, keyed, JobState::Completed).await?;
    expect_state(&q, plain, JobState::Dead).await?;
    let log = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let of = |id: queue_core::JobId| -> Vec<String> {
        let prefix = format!("{id} ");
        log.iter()
            .filter_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
            .collect()
    };
    let expected = [
        "a before",
        "b before",
        "k before",
        "handler",
        "k after ok",
        "b after ok",
        "a after ok",
    ];
    ensure!(of(keyed) == expected, "the kind's job ran {:?}", of(keyed));
    let expected = [
        "a before",
        "b before",
        "default",
        "b after err",
        "a after err",
    ];
    ensure!(
        of(plain) == expected,
        "the default handler's job ran {:?}",
        of(plain)
    );
    Ok(())
}

/// A middleware that turns a handler's "busy" error into a snooze: the database holds the job
/// snoozed (pending, due later, its attempt given back, no failure recorded), while a
/// permanent error it lets through makes its job dead.
pub async fn middleware_maps_an_error_to_a_snooze(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let busy = q.push(job("mws", json!({ "busy": true }))).await?;
    let broken = q.push(job("mws", json!({ "busy": false }))).await?;
    let handle = Worker::builder(q.clone(), "mws")
        .concurrency(2)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .middleware(middleware_fn(|ctx: JobContext, next| async move {
            match next.run(ctx).await {
                Err(e) if e.message().contains("429") => {
                    Err(JobError::snooze(Duration::from_secs(3600)))
                }
                other => other,
            }
        }))
        .handler_fn(|ctx: JobContext| async move {
            if ctx.job.payload_value()["busy"] == json!(true) {
                Err(JobError::retryable("upstream answered 429"))
            } else {
                Err(JobError::permanent("broken payload"))
            }
        })
        .build()?
        .start();
    let s = wait_for_stats(&q, "mws", Duration::from_secs(20), |s| {
        s.dead == 1 && s.scheduled == 1 && s.running == 0
    })
    .await;
    let report = handle.shutdown(Duration::from_secs(2)).await;
    s?;
    let j = expect_state(&q, busy, JobState::Pending).await?;
    ensure!(
        j.attempts == 0 && j.snoozes == 1 && j.errors.is_empty() && j.last_error.is_none(),
        "the mapped error was not stored as a snooze: {j:?}"
    );
    ensure!(
        j.run_at > q.now().await? + chrono::Duration::minutes(50),
        "not due an hour later: {}",
        j.run_at
    );
    let j = expect_state(&q, broken, JobState::Dead).await?;
    ensure!(j.last_error.as_deref() == Some("broken payload"), "{j:?}");
    ensure!(
        report.counters.snoozed == 1 && report.counters.dead == 1 && report.counters.retried == 0,
        "{report:?}"
    );
    Ok(())
}

/// A tenant a middleware found for the run.
#[derive(Clone, Debug)]
struct Tenant(String);

/// A value a middleware adds to the run's context reaches the handler (which stores it as the
/// job's output), and each run gets its own.
pub async fn middleware_context_reaches_the_handler(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let ids = q
        .push_batch(vec![
            job("mwc", json!({ "tenant": "acme" })),
            job("mwc", json!({ "tenant": "globex" })),
        ])
        .await?;
    let handle = Worker::builder(q.clone(), "mwc")
        .concurrency(2)
        .poll_interval(Duration::from_millis(10), Duration::from_millis(100))
        .middleware(middleware_fn(|mut ctx: JobContext, next| async move {
            let tenant = ctx.job.payload_value()["tenant"]
                .as_str()
                .unwrap_or("none")
                .to_owned();
            ctx.extensions_mut().insert(Tenant(tenant));
            next.run(ctx).await
        }))
        .handler_fn(|ctx: JobContext| async move {
            let Some(Tenant(tenant)) = ctx.extensions().get::<Tenant>().cloned() else {
                return Err(JobError::permanent("no tenant in the context"));
            };
            ctx.record_output(&json!({ "tenant": tenant }))?;
            Ok(())
        })
        .build()?
        .start();
    let s = wait_for_stats(&q, "mwc", Duration::from_secs(20), |s| s.completed == 2).await;
    handle.shutdown(Duration::from_secs(2)).await;
    s?;
    for (id, tenant) in ids.iter().zip(["acme", "globex"]) {
        let j = expect_state(&q, *id, JobState::Completed).await?;
        let output: Option<serde_json::Value> = j.output()?;
        ensure!(
            output == Some(json!({ "tenant": tenant })),
            "job {id} stored {output:?}"
        );
    }
    Ok(())
}
