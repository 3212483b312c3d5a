//! Unique jobs, bulk operations and retention on one SQLite file: 64 tasks push the same sync
//! job at once and one job is stored; a rule "once per customer and day" keeps its key after
//! the job completed; a push that replaces a waiting job's payload; dead jobs retried by filter;
//! a retention round that deletes what its rules say.
//!
//! `cargo run --example unique` (uses a fresh file in the temporary directory), or
//! `cargo run --example unique -- sqlite://jobs.db` for a file of your choice.

use std::collections::HashSet;
use std::time::Duration;

use dbqueue::{
    BulkAction, Failure, JobArgs, JobFilter, JobState, KindOptions, NewJob, PopRequest, Retention,
    Unique,
};

/// Synchronise one account: at most one such job waits or runs per account.
#[derive(serde::Serialize, serde::Deserialize)]
struct SyncAccount {
    account: u64,
}

impl JobArgs for SyncAccount {
    const KIND: &'static str = "sync_account";

    fn options() -> KindOptions {
        KindOptions::new().queue("sync").unique(
            Unique::new()
                .by_args()
                .states([JobState::Pending, JobState::Running]),
        )
    }
}

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-unique-{}.db", std::process::id()));
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| format!("sqlite://{}", path.display()));
    let queue = dbqueue::connect_and_migrate(&url).await?;

    // 64 pushes of the same job at once: the database stores one, and every pusher learns it.
    let pushes: Vec<_> = (0..64)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                queue
                    .push_outcome(NewJob::of(&SyncAccount { account: 42 })?)
                    .await
            })
        })
        .collect();
    let mut ids = HashSet::new();
    let mut inserted = 0;
    for p in pushes {
        let outcome = p.await.expect("the push task")?;
        inserted += usize::from(outcome.inserted());
        ids.insert(outcome.id());
    }
    println!(
        "64 pushes of one sync: {inserted} stored; the pushers were told {} id(s)",
        ids.len()
    );

    // Once per customer and day, even after it completed: a second push the same day meets it.
    let daily = Unique::new()
        .by_fields(["customer"])
        .by_period(Duration::from_secs(24 * 3600))
        .states([JobState::Pending, JobState::Running, JobState::Completed]);
    let report = |customer: &str| {
        NewJob::new(
            "reports",
            &serde_json::json!({ "customer": customer, "format": "pdf" }),
        )
        .map(|j| j.kind("daily_report").unique(daily.clone()))
    };
    let first = queue.push_outcome(report("acme")?).await?;
    let leased = queue.pop(PopRequest::new("reports")).await?;
    queue.ack(&leased[0].lease).await?;
    let again = queue.push_outcome(report("acme")?).await?;
    println!("daily report: {first:?}, completed, then the same day: {again:?}");

    // Replace: a push that meets a waiting job gives it its payload, priority and run time.
    let rule = Unique::new().replace();
    let digest = |n: u32| {
        NewJob::new("digests", &serde_json::json!({ "items": n })).map(|j| {
            j.kind("digest")
                .delay(Duration::from_secs(60))
                .unique(rule.clone())
        })
    };
    let waiting = queue.push_outcome(digest(1)?).await?;
    let replaced = queue.push_outcome(digest(3)?).await?;
    let job = queue.get(replaced.id()).await?.expect("the digest");
    println!(
        "digest: {waiting:?}, then {replaced:?}; its payload is now {}",
        job.payload.get()
    );

    // Bulk: three jobs die, then every dead job of the queue goes back to pending.
    for n in 0..3 {
        queue
            .push(NewJob::new("imports", &serde_json::json!({ "file": n }))?)
            .await?;
    }
    for leased in queue.pop(PopRequest::new("imports").limit(3)).await? {
        queue
            .fail(&leased.lease, Failure::permanent("bad file"))
            .await?;
    }
    let dead = JobFilter {
        queue: Some("imports".into()),
        state: Some(JobState::Dead),
        ..JobFilter::default()
    };
    let touched = queue.count_matching(BulkAction::Retry, &dead).await?;
    let done = queue.bulk(BulkAction::Retry, &dead).await?;
    println!(
        "retry dead imports: {touched} matched, {} retried",
        done.changed
    );

    // Retention: completed jobs are deleted by age (here at once); a second round within the
    // interval does not run, in this process or any other.
    let rules = Retention::default().delete_after(JobState::Completed, Duration::ZERO);
    let round = queue.run_retention(&rules).await?;
    let next = queue.run_retention(&rules).await?;
    println!(
        "retention: deleted {} completed job(s); a second round now: {:?}",
        round.map_or(0, |r| r.completed),
        next
    );

    drop(queue);
    let _ = std::fs::remove_file(&path);
    Ok(())
}
