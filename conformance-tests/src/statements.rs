//! Checks of one dialect's statements below the engine, for what the catalogue cannot reach
//! through the `Queue` trait: the error history's bound at sizes other than the engine's.
//! Each backend's test file runs them as dialect tests on a queue of its own.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use queue_core::engine::{JobFailDead, JobFailRetry, JobRescue, Maintenance, Running};
use queue_core::{Backend, JobState, Lease, NewJob, PopRequest, Queue};

/// Claims the one pending job of `queue` with `lease`.
async fn claim<B: Backend + Queue>(q: &B, queue: &str, lease: Duration) -> anyhow::Result<Lease> {
    let mut got = q
        .pop(PopRequest::new(queue).lease(lease).worker("hist-w"))
        .await?;
    ensure!(got.len() == 1, "claimed {} jobs of {queue}", got.len());
    Ok(got.remove(0).lease)
}

/// The history keeps exactly the newest `errors_kept` entries, oldest first, whatever the bound
/// (1, 2 and 3 here, beside the engine's own in the catalogue): through `job_fail_retry`,
/// `job_fail_dead` and `job_rescue` (to pending and to dead), each entry with its attempt, the
/// worker that held the job and the error.
///
/// # Errors
/// When any entry or count differs from the rule.
pub async fn error_history_keeps_the_newest<B: Backend + Queue>(q: &B) -> anyhow::Result<()> {
    let d = q.engine().driver();
    for kept in [1u32, 2, 3] {
        let queue = format!("hist-{kept}");
        let id = q
            .push(NewJob::new(queue.as_str(), &kept)?.max_attempts(50))
            .await?;
        let mut want: Vec<(u32, String)> = Vec::new();
        for attempt in 1..=5u32 {
            let lease = claim(q, &queue, Duration::from_secs(30)).await?;
            let error = format!("failure {attempt} of a bound of {kept}");
            let p = JobFailRetry {
                lease: &lease,
                delay: Duration::ZERO,
                error: &error,
                errors_kept: kept,
            };
            let changed = d.job_fail_retry(p).await.map_err(|e| q.engine().error(e))?;
            ensure!(changed == 1, "job_fail_retry changed {changed} rows");
            want.push((attempt, error));
            let keep_from = want.len().saturating_sub(kept as usize);
            let job = q.get(id).await?.context("the job")?;
            let got: Vec<(u32, String)> = job
                .errors
                .iter()
                .map(|e| (e.attempt, e.error.clone()))
                .collect();
            ensure!(
                got == want[keep_from..],
                "bound {kept}, after attempt {attempt}: {got:?}"
            );
            ensure!(
                job.errors
                    .iter()
                    .all(|e| e.worker.as_deref() == Some("hist-w")),
                "{:?}",
                job.errors
            );
        }
        // A rescue appends too, then a dead failure.
        let lease = claim(q, &queue, Duration::from_millis(50)).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let p = JobRescue {
            jobs: &[(id, lease.token)],
            dead: false,
            error: "lease expired",
            errors_kept: kept,
        };
        let changed = d.job_rescue(p).await.map_err(|e| q.engine().error(e))?;
        ensure!(changed == 1, "job_rescue changed {changed} rows");
        let lease = claim(q, &queue, Duration::from_secs(30)).await?;
        let p = JobFailDead {
            lease: &lease,
            error: "the end",
            errors_kept: kept,
        };
        let changed = d.job_fail_dead(p).await.map_err(|e| q.engine().error(e))?;
        ensure!(changed == 1, "job_fail_dead changed {changed} rows");
        want.push((6, "lease expired".into()));
        want.push((7, "the end".into()));
        let job = q.get(id).await?.context("the job")?;
        ensure!(job.state == JobState::Dead, "{job:?}");
        let got: Vec<(u32, String)> = job
            .errors
            .iter()
            .map(|e| (e.attempt, e.error.clone()))
            .collect();
        ensure!(
            got == want[want.len() - kept as usize..],
            "bound {kept}, at the end: {got:?}"
        );
        ensure!(
            job.errors.windows(2).all(|w| w[0].at <= w[1].at),
            "{:?}",
            job.errors
        );
        // A rescue into dead, on a job of its own with an empty history: one entry.
        let other = q
            .push(NewJob::new(queue.as_str(), &0)?.max_attempts(1))
            .await?;
        let lease = claim(q, &queue, Duration::from_millis(50)).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let p = JobRescue {
            jobs: &[(other, lease.token)],
            dead: true,
            error: "lease expired",
            errors_kept: kept,
        };
        ensure!(d.job_rescue(p).await.map_err(|e| q.engine().error(e))? == 1);
        let job = q.get(other).await?.context("the other job")?;
        ensure!(
            job.state == JobState::Dead
                && job.errors.len() == 1
                && job.errors[0].attempt == 1
                && job.errors[0].worker.as_deref() == Some("hist-w"),
            "{job:?}"
        );
    }
    Ok(())
}
