//! Push a few jobs to a SQLite queue and run them with a worker.
//!
//! `cargo run --example basic` (uses a fresh file in the temporary directory), or
//! `cargo run --example basic -- sqlite://jobs.db` for a file of your choice.

use std::time::Duration;

use dbqueue::{JobContext, JobError, NewJob, Worker};

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Email {
    to: String,
    subject: String,
}

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-basic-{}.db", std::process::id()));
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| format!("sqlite://{}", path.display()));
    let queue = dbqueue::connect_and_migrate(&url).await?;

    // One job on its own, then a batch: a batch is stored all or nothing.
    queue
        .push(
            NewJob::new(
                "emails",
                &Email {
                    to: "ada@example.com".into(),
                    subject: "Welcome".into(),
                },
            )?
            .priority(10),
        )
        .await?;
    let batch = ["grace", "edsger", "barbara"]
        .iter()
        .map(|name| {
            NewJob::new(
                "emails",
                &Email {
                    to: format!("{name}@example.com"),
                    subject: "Newsletter".into(),
                },
            )
        })
        .collect::<dbqueue::Result<Vec<_>>>()?;
    queue.push_batch(batch).await?;

    let worker = Worker::builder(queue.clone(), "emails")
        .concurrency(4)
        .typed(|email: Email, ctx: JobContext| async move {
            if email.to.is_empty() {
                return Err(JobError::permanent("no recipient"));
            }
            println!(
                "attempt {}: sending {:?} to {}",
                ctx.attempt(),
                email.subject,
                email.to
            );
            Ok(())
        })
        .build()?
        .start();

    // Wait until the four jobs are done (a real service would run until it is told to stop).
    let counters = worker.counters();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while counters.completed() + counters.dead() < 4 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let report = worker.shutdown(Duration::from_secs(5)).await;
    println!(
        "{} completed, {} dead",
        report.counters.completed, report.counters.dead
    );
    for s in queue.stats(Some("emails")).await? {
        println!(
            "queue {}: {} pending, {} running, {} completed",
            s.queue,
            s.available + s.scheduled,
            s.running,
            s.completed
        );
    }
    if std::env::args().nth(1).is_none() {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    Ok(())
}
