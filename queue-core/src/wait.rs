//! Waiting for a job to finish ([`Queue::wait`], and `wait_output` and `push_and_wait` on
//! `dyn Queue`): a bounded poll of the job's row, each read a lookup by primary key, with
//! pauses that grow from 10 ms to [`WAIT_POLL_MAX`], so a short job is seen soon and a long
//! wait costs at most a few reads a second.

use std::time::Duration;

use serde::de::DeserializeOwned;
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::job::{Job, JobId, NewJob};
use crate::queue::Queue;

/// The longest [`Queue::wait`].
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);
/// The longest pause between two reads of a waited-for job.
pub const WAIT_POLL_MAX: Duration = Duration::from_millis(250);
const WAIT_POLL_MIN: Duration = Duration::from_millis(10);

/// Checks a wait's timeout.
pub(crate) fn check_timeout(timeout: Duration) -> Result<()> {
    if timeout.is_zero() {
        return Err(Error::invalid("timeout", "must be longer than zero"));
    }
    if timeout > MAX_WAIT {
        return Err(Error::invalid("timeout", "must be at most 24 hours"));
    }
    Ok(())
}

/// Reads job `id` until it has finished or `timeout` has passed.
pub(crate) async fn until_finished<Q: Queue + ?Sized>(
    queue: &Q,
    id: JobId,
    timeout: Duration,
) -> Result<Job> {
    check_timeout(timeout)?;
    let deadline = Instant::now() + timeout;
    let mut pause = WAIT_POLL_MIN;
    loop {
        match queue.get(id).await? {
            None => return Err(Error::NotFound { job: id }),
            Some(job) if job.state.is_finished() => return Ok(job),
            Some(_) => {}
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::WaitTimedOut {
                job: id,
                waited: timeout,
            });
        }
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(WAIT_POLL_MAX);
    }
}

impl dyn Queue {
    /// [`Queue::wait`], then the job's recorded output deserialized into
    /// `T` (`None` when it recorded none).
    ///
    /// # Errors
    /// As `wait`; [`Error::Payload`] when the output does not fit `T`.
    pub async fn wait_output<T: DeserializeOwned>(
        &self,
        id: JobId,
        timeout: Duration,
    ) -> Result<(Job, Option<T>)> {
        let job = self.wait(id, timeout).await?;
        let output = job.output::<T>()?;
        Ok((job, output))
    }

    /// Pushes `job` and waits until it has finished ([`Queue::wait`]):
    /// for a caller that needs the outcome now, e.g. a request handler that hands its work to
    /// a worker of another process. The timeout is checked before the push.
    ///
    /// # Errors
    /// As [`Queue::push`] and `wait`.
    pub async fn push_and_wait(&self, job: NewJob, timeout: Duration) -> Result<Job> {
        check_timeout(timeout)?;
        let id = self.push(job).await?;
        self.wait(id, timeout).await
    }
}
