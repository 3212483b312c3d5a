//! Bad input: every rule, table-driven. Each call must return `InvalidInput` naming the field,
//! and nothing may be stored or changed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure};
use queue_core::{JobState, Lease, ListRequest, PopRequest, PruneRequest, Queue};
use serde_json::json;

use super::{all_jobs, get, job, pop_one, row_fingerprint};
use crate::Ctx;

type Call = Box<
    dyn Fn(Arc<dyn Queue>, Lease) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>>
        + Send
        + Sync,
>;

macro_rules! call {
    (|$q:ident, $lease:ident| $body:expr) => {
        Box::new(move |$q: Arc<dyn Queue>, $lease: Lease| {
            let _ = &$lease;
            let fut: Pin<Box<dyn Future<Output = Result<String, String>> + Send>> =
                Box::pin(async move { super::invalid_field(&$body.await) });
            fut
        }) as Call
    };
}

/// Every bad-input rule returns `InvalidInput` naming its field, and stores nothing.
pub async fn bad_input_rejected(ctx: Ctx) -> anyhow::Result<()> {
    let fx = ctx.fixture().await?;
    let q = fx.queue();
    let limits = q.capabilities().limits.clone();
    // One held job, for the calls that need a lease.
    let held_id = q.push(job("v", json!("held"))).await?;
    let held = pop_one(&q, "v").await?;
    let held_before = row_fingerprint(&get(&q, held_id).await?);
    let max_payload = limits.max_payload_bytes;
    let max_batch = limits.max_batch;
    let max_pop = limits.max_pop;

    let cases: Vec<(&str, &str, Call)> = vec![
        (
            "push: empty queue",
            "queue",
            call!(|q, l| q.push(job("", json!(1)))),
        ),
        (
            "push: queue too long",
            "queue",
            call!(|q, l| q.push(job(&"q".repeat(129), json!(1)))),
        ),
        (
            "push: bad character in queue",
            "queue",
            call!(|q, l| q.push(job("no spaces", json!(1)))),
        ),
        (
            "push: queue with a quote",
            "queue",
            call!(|q, l| q.push(job("x'; drop table", json!(1)))),
        ),
        (
            "push: max_attempts 0",
            "max_attempts",
            call!(|q, l| q.push(job("v", json!(1)).max_attempts(0))),
        ),
        (
            "push: payload over the limit",
            "payload",
            call!(|q, l| q.push(job("v", json!("x".repeat(max_payload))))),
        ),
        (
            "push: delay over 10 years",
            "delay",
            call!(|q, l| q.push(
                job("v", json!(1)).delay(queue_core::validate::MAX_DELAY + Duration::from_secs(1))
            )),
        ),
        (
            "push: run_at over 10 years ahead",
            "run_at",
            call!(|q, l| q.push(
                job("v", json!(1)).run_at(chrono::Utc::now() + chrono::Duration::days(3700))
            )),
        ),
        (
            "push: empty dedup key",
            "dedup_key",
            call!(|q, l| q.push(job("v", json!(1)).dedup_key(""))),
        ),
        (
            "push: dedup key too long",
            "dedup_key",
            call!(|q, l| q.push(job("v", json!(1)).dedup_key("k".repeat(256)))),
        ),
        (
            "pop: limit 0",
            "limit",
            call!(|q, l| q.pop(PopRequest::new("v").limit(0))),
        ),
        (
            "pop: limit over max",
            "limit",
            call!(|q, l| q.pop(PopRequest::new("v").limit(max_pop + 1))),
        ),
        (
            "pop: lease too short",
            "lease",
            call!(|q, l| q.pop(PopRequest::new("v").lease(Duration::from_millis(5)))),
        ),
        (
            "pop: lease too long",
            "lease",
            call!(|q, l| q.pop(PopRequest::new("v").lease(Duration::from_secs(25 * 3600)))),
        ),
        (
            "pop: empty worker id",
            "worker",
            call!(|q, l| q.pop(PopRequest::new("v").worker(""))),
        ),
        (
            "pop: worker id too long",
            "worker",
            call!(|q, l| q.pop(PopRequest::new("v").worker("w".repeat(129)))),
        ),
        (
            "pop: bad queue",
            "queue",
            call!(|q, l| q.pop(PopRequest::new(""))),
        ),
        (
            "push_batch: over the limit",
            "jobs",
            call!(|q, l| q.push_batch((0..=max_batch).map(|i| job("v", json!(i))).collect())),
        ),
        (
            "push_batch: bad job",
            "jobs[1].dedup_key",
            call!(|q, l| q.push_batch(vec![job("v", json!(0)), job("v", json!(1)).dedup_key("")])),
        ),
        (
            "extend: by 0",
            "by",
            call!(|q, l| q.extend(&l, Duration::ZERO)),
        ),
        (
            "extend: by over a day",
            "by",
            call!(|q, l| q.extend(&l, Duration::from_secs(25 * 3600))),
        ),
        (
            "ack_batch: over the limit",
            "leases",
            call!(|q, l| q.ack_batch(&vec![l.clone(); max_batch + 1])),
        ),
        (
            "prune: a state that is not finished",
            "states",
            call!(|q, l| q.prune(PruneRequest {
                older_than: Duration::ZERO,
                states: vec![JobState::Completed, JobState::Pending],
                queue: None,
            })),
        ),
        (
            "prune: no state",
            "states",
            call!(|q, l| q.prune(PruneRequest {
                older_than: Duration::ZERO,
                states: vec![],
                queue: None
            })),
        ),
        (
            "prune: bad queue",
            "queue",
            call!(|q, l| q.prune(PruneRequest {
                older_than: Duration::ZERO,
                states: vec![JobState::Completed],
                queue: Some("a b".into())
            })),
        ),
        (
            "list: limit 0",
            "limit",
            call!(|q, l| q.list(ListRequest {
                queue: None,
                state: None,
                limit: 0,
                before: None,
                kind: None,
            })),
        ),
        (
            "list: limit over 1000",
            "limit",
            call!(|q, l| q.list(ListRequest {
                queue: None,
                state: None,
                limit: 1001,
                before: None,
                kind: None,
            })),
        ),
        (
            "list: bad queue",
            "queue",
            call!(|q, l| q.list(ListRequest {
                queue: Some("".into()),
                state: None,
                limit: 10,
                before: None,
                kind: None,
            })),
        ),
        (
            "stats: bad queue",
            "queue",
            call!(|q, l| q.stats(Some("bad/queue"))),
        ),
    ];

    let mut failures = Vec::new();
    for (what, field, call) in &cases {
        match call(q.clone(), held.lease.clone()).await {
            Ok(got) if got == *field => {}
            Ok(got) => failures.push(format!(
                "{what}: InvalidInput named {got:?}, expected {field:?}"
            )),
            Err(other) => failures.push(format!(
                "{what}: expected InvalidInput on {field:?}, got {other}"
            )),
        }
    }
    if !failures.is_empty() {
        bail!(
            "{} of {} rules failed:\n  {}",
            failures.len(),
            cases.len(),
            failures.join("\n  ")
        );
    }
    // Nothing stored, nothing changed.
    let jobs = all_jobs(&q).await?;
    ensure!(
        jobs.len() == 1 && jobs[0].id == held_id,
        "rejected calls stored {} rows",
        jobs.len() - 1
    );
    ensure!(
        row_fingerprint(&get(&q, held_id).await?) == held_before,
        "a rejected call changed the held job"
    );
    // A maximum-size payload is still accepted (the limit is inclusive).
    let exact = "x".repeat(max_payload - 2);
    let id = q.push(job("v", json!(exact))).await?;
    ensure!(get(&q, id).await?.payload.get().len() >= max_payload - 2);
    Ok(())
}
