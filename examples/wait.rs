//! Waiting for a job: a request handler pushes work for a worker (here in the same process, on
//! the same SQLite file; usually another process) and waits for its outcome and output.
//!
//! `cargo run --example wait` (uses a fresh file in the temporary directory).

use std::time::Duration;

use dbqueue::{JobContext, JobError, JobState, NewJob, Worker};

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Thumbnail {
    width: u32,
    height: u32,
}

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-wait-{}.db", std::process::id()));
    let queue = dbqueue::connect_and_migrate(&format!("sqlite://{}", path.display())).await?;
    let worker = Worker::builder(queue.clone(), "images")
        .handler_fn(|ctx: JobContext| async move {
            let size = ctx.job.payload_value()["size"].as_u64().unwrap_or(0) as u32;
            if size == 0 {
                return Err(JobError::permanent("an empty image"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            ctx.record_output(&Thumbnail {
                width: size / 4,
                height: size / 8,
            })?;
            Ok(())
        })
        .build()?
        .start();

    // Push and wait: the job as stored once it finished.
    let job = queue
        .push_and_wait(
            NewJob::new("images", &serde_json::json!({ "size": 1024 }))?,
            Duration::from_secs(10),
        )
        .await?;
    let thumb: Option<Thumbnail> = job.output()?;
    println!("job {} {}: {thumb:?}", job.id, job.state);

    // Wait for a job pushed earlier, its output deserialized.
    let id = queue
        .push(NewJob::new("images", &serde_json::json!({ "size": 0 }))?)
        .await?;
    let (job, thumb) = queue
        .wait_output::<Thumbnail>(id, Duration::from_secs(10))
        .await?;
    assert_eq!(job.state, JobState::Dead);
    println!(
        "job {} {} ({:?}): {thumb:?}",
        job.id, job.state, job.last_error
    );

    worker.shutdown(Duration::from_secs(5)).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
