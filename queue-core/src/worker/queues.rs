//! A running worker's queues, changed at runtime through its handle: add a queue, change a
//! queue's concurrency, remove a queue (its running jobs finish within the shutdown timeout,
//! the rest are released with their attempts given back).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;

use super::builder::check_concurrency;
use super::runtime::{join_by, settle_deadline, Lane, WorkerHandle};
use super::QueueConfig;
use crate::error::Result;
use crate::validate;

impl WorkerHandle {
    /// Starts claiming from the queue `name` too, running at most `concurrency` of its jobs at
    /// once (its own slots, claims and buffer, with the worker's prefetch), as
    /// [`WorkerBuilder::queue`](super::WorkerBuilder::queue) does before the start.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming `queue` (an invalid name, a queue the worker already
    /// serves, a worker shutting down) or `concurrency` (0, or above [`MAX_CONCURRENCY`](super::MAX_CONCURRENCY)).
    pub fn add_queue(&self, name: impl Into<String>, concurrency: usize) -> Result<()> {
        let name = name.into();
        validate::queue_name(&name)?;
        check_concurrency(concurrency, &name)?;
        let first = &self.shared.config.queues[0];
        self.shared.add_lane(QueueConfig {
            name,
            concurrency,
            prefetch: first.prefetch,
            pop_concurrency: first.pop_concurrency,
        })
    }

    /// Runs at most `concurrency` jobs of the queue `name` at once from now on. More slots
    /// start at once; fewer take effect as running jobs finish: no job of the queue starts
    /// until fewer than `concurrency` run.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming `queue` (not served by this worker) or `concurrency`.
    pub fn set_concurrency(&self, name: &str, concurrency: usize) -> Result<()> {
        check_concurrency(concurrency, name)?;
        let lane = self.shared.lane(name)?;
        lane.resize(&self.shared, concurrency);
        Ok(())
    }

    /// Stops claiming from the queue `name`: the jobs claimed but not started are released,
    /// the running ones may finish within the worker's shutdown timeout, and those still
    /// running then are stopped and released; a released job's attempt is given back. Returns
    /// once none of its jobs runs any more.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming `queue`: not served by this worker, or its last queue
    /// (shut the worker down instead).
    pub async fn remove_queue(&self, name: &str) -> Result<()> {
        let (lane, dispatcher) = self.shared.take_lane(name)?;
        let deadline = Instant::now() + self.shared.config.shutdown_timeout;
        let _ = lane.stop.send_replace(true);
        let slots = |lane: &Arc<Lane>| {
            lane.permits
                .clone()
                .acquire_many_owned(lane.concurrency() as u32)
        };
        if tokio::time::timeout_at(deadline, slots(&lane))
            .await
            .is_err()
        {
            tracing::warn!(
                target: super::LOG_TARGET,
                queue = %name,
                "the removed queue's jobs outlived the shutdown timeout; stopping them and releasing their jobs"
            );
            let _ = lane.abort.send_replace(true);
            let _ = slots(&lane).await;
        }
        // Its claims in flight come back and what they claimed is released.
        if let Some(dispatcher) = dispatcher {
            join_by(dispatcher, settle_deadline(deadline), "dispatcher").await;
        }
        self.shared.forget_lane(&lane);
        tracing::info!(target: super::LOG_TARGET, queue = %name, "queue removed from the worker");
        Ok(())
    }

    /// The queues the worker claims from now, each with its concurrency.
    pub fn queues(&self) -> Vec<(String, usize)> {
        self.shared
            .lanes()
            .iter()
            .filter(|l| !l.removed.load(Ordering::SeqCst))
            .map(|l| (l.config.name.clone(), l.concurrency()))
            .collect()
    }
}
