//! Two kinds of job on two queues, run by one worker: a report that snoozes while its data is
//! not ready, records its progress in the job's metadata and its result as the job's output;
//! e-mails, one of which fails once and shows the history of its attempts.
//!
//! `cargo run --example kinds` (uses a fresh file in the temporary directory), or
//! `cargo run --example kinds -- sqlite://jobs.db` for a file of your choice.

use std::time::Duration;

use dbqueue::{JobArgs, JobContext, JobError, KindOptions, NewJob, RetryPolicy, Worker};
use serde_json::json;

/// An e-mail to send: kind `send_email`, on the queue `mailers`.
#[derive(serde::Serialize, serde::Deserialize)]
struct SendEmail {
    to: String,
}

impl JobArgs for SendEmail {
    const KIND: &'static str = "send_email";

    fn options() -> KindOptions {
        KindOptions::new()
            .queue("mailers")
            .max_attempts(5)
            // Retried quickly here, so that the example ends soon.
            .retry_policy(RetryPolicy {
                base: Duration::from_millis(200),
                ..RetryPolicy::default()
            })
    }
}

/// A report to build: kind `build_report`, on the queue `reports`, at most 10 s per attempt.
#[derive(serde::Serialize, serde::Deserialize)]
struct BuildReport {
    month: String,
}

impl JobArgs for BuildReport {
    const KIND: &'static str = "build_report";

    fn options() -> KindOptions {
        KindOptions::new()
            .queue("reports")
            .priority(5)
            .timeout(Duration::from_secs(10))
    }
}

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-kinds-{}.db", std::process::id()));
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| format!("sqlite://{}", path.display()));
    let queue = dbqueue::connect_and_migrate(&url).await?;

    // Each typed push takes its kind's queue, priority and attempts; the kind's timeout is not
    // stored with the job: the worker applies it when the job runs.
    let report = queue
        .push(
            NewJob::of(&BuildReport {
                month: "2026-11".into(),
            })?
            .meta(&json!({ "requested_by": "ada" }))?,
        )
        .await?;
    let mut emails = Vec::new();
    for to in ["grace@example.com", "flaky@example.com"] {
        emails.push(
            queue
                .push(NewJob::of(&SendEmail { to: to.into() })?)
                .await?,
        );
    }

    // One worker, two queues with their own concurrency, a handler per kind.
    let worker = Worker::builder(queue.clone(), "mailers")
        .concurrency(4)
        .queue("reports", 1)
        .job(|email: SendEmail, ctx: JobContext| async move {
            if email.to.starts_with("flaky") && ctx.attempt() == 1 {
                return Err(JobError::retryable("the mail server said 421, try later"));
            }
            println!("sent to {} (attempt {})", email.to, ctx.attempt());
            Ok(())
        })
        .job(|report: BuildReport, ctx: JobContext| async move {
            // Not ready the first time: run again shortly, without spending an attempt.
            if ctx.job.snoozes == 0 {
                println!("report {}: data not ready, snoozing", report.month);
                return Err(JobError::snooze(Duration::from_millis(300)));
            }
            for percent in [25, 50, 75, 100] {
                // Merged into the job's metadata in the database, under this job's lease.
                ctx.merge_meta(json!({ "progress": percent })).await?;
            }
            ctx.record_output(&json!({ "month": report.month, "rows": 1234 }))?;
            println!("report {} built", report.month);
            Ok(())
        })
        .poll_interval(Duration::from_millis(20), Duration::from_millis(200))
        .build()?
        .start();

    let counters = worker.counters();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while counters.completed() < 3 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let report_counts = worker.shutdown(Duration::from_secs(5)).await.counters;
    println!(
        "{} completed, {} retried, {} snoozed",
        report_counts.completed, report_counts.retried, report_counts.snoozed
    );

    // What the database holds about each job.
    for id in std::iter::once(report).chain(emails) {
        let Some(job) = queue.get(id).await? else {
            continue;
        };
        println!(
            "{} {:<12} {:<9} attempts {} snoozes {} meta {} output {}",
            job.queue,
            job.kind.as_deref().unwrap_or("-"),
            job.state,
            job.attempts,
            job.snoozes,
            job.meta_value(),
            job.output::<serde_json::Value>()?
                .map_or_else(|| "-".to_owned(), |o| o.to_string()),
        );
        for e in &job.errors {
            println!(
                "    attempt {} failed at {}: {}",
                e.attempt,
                e.at.format("%H:%M:%S%.3f"),
                e.error
            );
        }
    }
    if std::env::args().nth(1).is_none() {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    Ok(())
}
