//! Jobs that wait for other jobs: an album whose three images are resized in parallel and then
//! published (the publish job reads what each resize recorded), an order that is charged, then
//! shipped, then confirmed (a chain), and an import of chunks with a callback that reports how
//! many chunks went through (a batch). One worker runs them all.
//!
//! `cargo run --example workflow` (uses a fresh file in the temporary directory), or
//! `cargo run --example workflow -- sqlite://jobs.db` for a file of your choice.

use std::time::Duration;

use dbqueue::{
    Dep, JobArgs, JobContext, JobError, JobState, KindOptions, NewJob, Worker, Workflow,
};
use serde_json::json;

#[derive(serde::Serialize, serde::Deserialize)]
struct Resize {
    image: String,
}

impl JobArgs for Resize {
    const KIND: &'static str = "resize";

    fn options() -> KindOptions {
        KindOptions::new().queue("media")
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Publish {
    album: String,
}

impl JobArgs for Publish {
    const KIND: &'static str = "publish";

    fn options() -> KindOptions {
        KindOptions::new().queue("media")
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Step {
    order: u32,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ImportChunk {
    n: u32,
}

impl JobArgs for ImportChunk {
    const KIND: &'static str = "import_chunk";

    fn options() -> KindOptions {
        // One attempt: a bad chunk is counted as dead at once, so the example ends soon.
        KindOptions::new().queue("imports").max_attempts(1)
    }
}

#[tokio::main]
async fn main() -> dbqueue::Result<()> {
    let path = std::env::temp_dir().join(format!("dbqueue-workflow-{}.db", std::process::id()));
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| format!("sqlite://{}", path.display()));
    let queue = dbqueue::connect_and_migrate(&url).await?;

    // A fan-out and a fan-in: publish waits for the three resizes; all four jobs are stored in
    // one transaction, or none is.
    let mut album = Workflow::new().name("album-42");
    let mut resizes = Vec::new();
    for image in ["beach.jpg", "hill.jpg", "lake.jpg"] {
        album = album.add(
            image,
            NewJob::of(&Resize {
                image: image.into(),
            })?,
        );
        resizes.push(Dep::on(image));
    }
    let album = album.add_after(
        "publish",
        NewJob::of(&Publish { album: "42".into() })?,
        resizes,
    );
    let album = queue.push_workflow(album).await?;

    // A chain: each step after the one before it completed.
    let order = |kind: &str| NewJob::new("orders", &Step { order: 7 }).map(|j| j.kind(kind));
    let chain = queue
        .push_workflow(
            Workflow::new()
                .name("order-7")
                .then("charge", order("charge")?)
                .then("ship", order("ship")?)
                .then("confirm", order("confirm")?),
        )
        .await?;

    // A batch: five chunks and a callback that runs once all have finished, however each
    // ended (chunk 3 fails).
    let chunks = (1..=5)
        .map(|n| NewJob::of(&ImportChunk { n }))
        .collect::<Result<Vec<_>, _>>()?;
    let report = NewJob::new("imports", &json!({"file": "customers.csv"}))?.kind("import_done");
    let batch = queue.push_workflow(Workflow::batch(chunks, report)).await?;

    let handle = Worker::builder(queue.clone(), "media")
        .concurrency(3)
        .queue("orders", 1)
        .queue("imports", 2)
        .poll_interval(Duration::from_millis(20), Duration::from_millis(200))
        .job(|args: Resize, ctx| async move {
            ctx.record_output(&json!({ "thumbnail": format!("thumb-{}", args.image) }))?;
            Ok(())
        })
        .job(|args: Publish, ctx| async move {
            // The results flow down: every dependency's recorded output.
            let thumbs: Vec<String> = ctx
                .dependencies()
                .await
                .map_err(|e| JobError::retryable(e.to_string()))?
                .iter()
                .filter_map(|d| d.output::<serde_json::Value>().ok().flatten())
                .filter_map(|o| o["thumbnail"].as_str().map(str::to_owned))
                .collect();
            println!("publishing album {} with {thumbs:?}", args.album);
            Ok(())
        })
        .kind_fn(
            "charge",
            KindOptions::new(),
            |_ctx: JobContext| async move {
                println!("order 7: charged");
                Ok(())
            },
        )
        .kind_fn("ship", KindOptions::new(), |_ctx: JobContext| async move {
            println!("order 7: shipped");
            Ok(())
        })
        .kind_fn(
            "confirm",
            KindOptions::new(),
            |_ctx: JobContext| async move {
                println!("order 7: confirmation sent");
                Ok(())
            },
        )
        .job(|chunk: ImportChunk, _ctx| async move {
            if chunk.n == 3 {
                return Err(JobError::permanent("chunk 3: bad row 17"));
            }
            Ok(())
        })
        .kind_fn(
            "import_done",
            KindOptions::new(),
            |ctx: JobContext| async move {
                let counts = ctx
                    .batch_counts()
                    .await
                    .map_err(|e| JobError::retryable(e.to_string()))?;
                println!(
                    "import finished: {} chunks imported, {} failed",
                    counts.completed,
                    counts.dead + counts.cancelled
                );
                Ok(())
            },
        )
        .build()?
        .start();

    // Wait until every job of the three workflows has finished.
    for id in [album.id, chain.id, batch.id] {
        loop {
            let info = queue.workflow(id).await?.expect("pushed above");
            if info.is_finished() {
                let states: Vec<String> = info
                    .jobs
                    .iter()
                    .map(|j| format!("{}={}", j.step, j.job.state))
                    .collect();
                println!(
                    "{}: {}",
                    info.name.as_deref().unwrap_or("batch"),
                    states.join(" ")
                );
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    handle.shutdown(Duration::from_secs(5)).await;
    let publish = queue.get(album.job("publish").expect("a step")).await?;
    assert_eq!(publish.map(|j| j.state), Some(JobState::Completed));
    Ok(())
}
