//! The transitions of a running job, each fenced by its lease token, and the rescue of
//! expired leases.

use std::time::Duration;

use super::{
    count_by, sort_claimed, Completion, Driver, Engine, Expired, JobClaim, JobComplete,
    JobCompleteMany, JobFailDead, JobFailRetry, JobMetaSet, JobRescue, JobSnooze, Target,
    LEASE_EXPIRED, LOG_TARGET, RESCUE_CHUNK,
};

use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::job::{
    merge_patch, FailOutcome, Failure, JobState, Lease, Leased, Snooze, SnoozeOutcome, ERRORS_KEPT,
};
use crate::queue::{validate_ack_batch, CheckedPop, ClaimStrategy};
use crate::retry::FailDecision;
use crate::validate;

/// Most read-merge-write rounds of one `merge_meta` before it gives up: each round that loses
/// does so to another write of the row, so this many merges at once of one holder all land.
const META_ROUNDS: usize = 64;

impl<D: Driver> Engine<D> {
    /// Why a fenced transition of `lease` changed nothing: the job was cancelled, or the lease
    /// is no longer current (also when the job is gone).
    async fn lease_error(&self, target: Target<'_, D::Conn>, lease: &Lease) -> Error {
        match self.driver().job_state(target, lease.job_id).await {
            Ok(Some(JobState::Cancelled)) => Error::Cancelled { job: lease.job_id },
            Ok(_) => Error::LeaseLost { job: lease.job_id },
            Err(e) => self.error(e),
        }
    }

    /// `Ok` when a fenced transition changed its row, else why not.
    async fn fenced(&self, changed: u64, lease: &Lease) -> Result<()> {
        if changed == 0 {
            Err(self.lease_error(Target::Pool, lease).await)
        } else {
            Ok(())
        }
    }

    /// Marks the job completed.
    ///
    /// # Errors
    /// As [`Queue::ack`](crate::Queue::ack).
    #[tracing::instrument(name = "ack", target = "queue::engine", level = "debug", skip_all, fields(job = %lease.job_id, queue = %lease.queue, attempt = lease.attempt))]
    pub async fn ack(&self, lease: &Lease) -> Result<()> {
        self.complete(lease, None).await
    }

    /// Marks the job completed with its output.
    ///
    /// # Errors
    /// As [`Queue::ack_with_output`](crate::Queue::ack_with_output).
    #[tracing::instrument(name = "ack", target = "queue::engine", level = "debug", skip_all, fields(job = %lease.job_id, queue = %lease.queue, attempt = lease.attempt))]
    pub async fn ack_with_output(&self, lease: &Lease, output: &RawValue) -> Result<()> {
        validate::output(output.get(), self.limits())?;
        self.complete(lease, Some(output.get())).await
    }

    async fn complete(&self, lease: &Lease, output: Option<&str>) -> Result<()> {
        let p = JobComplete {
            lease,
            output,
            completion: Completion::of(self.keeps_completed(), output),
        };
        let changed = self
            .retried("ack", || self.driver().job_complete(Target::Pool, p))
            .await
            .map_err(|e| self.error(e))?;
        self.fenced(changed, lease).await?;
        self.places_freed(std::slice::from_ref(lease)).await;
        if lease.workflow.is_some() {
            self.settle_after(&[lease.job_id], false).await;
        }
        Ok(())
    }

    /// Completes the job inside the caller's transaction on `conn`. The jobs of a workflow
    /// waiting for it are not settled here, inside a transaction whose commit the queue does
    /// not see (settling takes row locks there, which sibling completions would meet): the
    /// caller settles them after the commit with
    /// [`Queue::settle_dependents`](crate::Queue::settle_dependents) (a worker does when the
    /// handler [marked the job completed](crate::JobContext::mark_completed)), or the sweep
    /// does within a rescue interval.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] or [`Error::Cancelled`]: nothing was changed and the caller should
    /// roll back its own writes.
    pub async fn complete_in(
        &self,
        conn: &mut D::Conn,
        lease: &Lease,
        output: Option<&RawValue>,
    ) -> Result<()> {
        if let Some(o) = output {
            validate::output(o.get(), self.limits())?;
        }
        let p = JobComplete {
            lease,
            output: output.map(RawValue::get),
            completion: Completion::of(self.keeps_completed(), output.map(RawValue::get)),
        };
        let changed = self
            .driver()
            .job_complete(Target::Tx(&mut *conn), p)
            .await
            .map_err(|e| self.error(e))?;
        if changed == 0 {
            return Err(self.lease_error(Target::Tx(conn), lease).await);
        }
        Ok(())
    }

    /// Completes every job whose lease is current.
    ///
    /// # Errors
    /// As [`Queue::ack_batch`](crate::Queue::ack_batch).
    #[tracing::instrument(name = "ack_batch", target = "queue::engine", level = "debug", skip_all, fields(jobs = leases.len()))]
    pub async fn ack_batch(&self, leases: &[Lease]) -> Result<u64> {
        validate_ack_batch(leases, self.limits())?;
        if leases.is_empty() {
            return Ok(0);
        }
        let done = self
            .retried("ack_batch", || {
                self.driver().job_complete_many(JobCompleteMany {
                    leases,
                    completion: self.batch_completion(),
                })
            })
            .await
            .map_err(|e| self.error(e))?;
        self.places_freed(leases).await;
        self.settle_after(&workflow_jobs(leases), false).await;
        Ok(done)
    }

    /// Completes `leases`, then claims with `req`: in one call to the driver where the dialect
    /// can (and the claim strategy is a single statement), else as two.
    ///
    /// # Errors
    /// As [`Queue::ack_batch_and_pop`](crate::Queue::ack_batch_and_pop).
    pub async fn ack_batch_and_pop(
        &self,
        leases: &[Lease],
        req: &CheckedPop,
    ) -> Result<(u64, Result<Vec<Leased>>)> {
        validate_ack_batch(leases, self.limits())?;
        let single_statement_claim = self.inner.caps.claim != ClaimStrategy::Optimistic;
        let r = req.request();
        if !leases.is_empty() && single_statement_claim && !self.known_controlled(&r.queue) {
            validate::pop_limit(r.limit, self.limits())?;
            let p = JobClaim {
                queue: &r.queue,
                limit: r.limit,
                lease: r.lease,
                worker: &r.worker,
                controls_checked: false,
                after: None,
            };
            let start = self.claim_start(p.queue);
            let p = JobClaim {
                after: start.after,
                ..p
            };
            let started = std::time::Instant::now();
            let combined = self
                .retried("ack_batch_and_pop", || {
                    self.driver().job_complete_and_claim(
                        JobCompleteMany {
                            leases,
                            completion: self.batch_completion(),
                        },
                        p,
                    )
                })
                .await
                .map_err(|e| self.error(e))?;
            if let Some((acked, jobs)) = combined {
                // The completions may be of other queues than the claim's (a worker serving
                // several queues sends them along with whichever claim comes next).
                self.places_freed(leases).await;
                self.settle_after(&workflow_jobs(leases), false).await;
                let mut jobs = self.claimed_from(p, start, jobs);
                if jobs.is_empty() {
                    let claimed = self.claim_if_controlled(p).await;
                    self.count_claim(&r.queue, started, &claimed);
                    return Ok((acked, claimed));
                }
                sort_claimed(&mut jobs);
                let claimed = Ok(jobs);
                self.count_claim(&r.queue, started, &claimed);
                return Ok((acked, claimed));
            }
        }
        let acked = self.ack_batch(leases).await?;
        Ok((acked, self.pop_checked(req).await))
    }

    /// Records a failure as the retry policy decides.
    ///
    /// # Errors
    /// As [`Queue::fail`](crate::Queue::fail).
    #[tracing::instrument(name = "fail", target = "queue::engine", level = "debug", skip_all, fields(job = %lease.job_id, queue = %lease.queue, attempt = lease.attempt))]
    pub async fn fail(&self, lease: &Lease, failure: Failure) -> Result<FailOutcome> {
        let error = validate::error_text(&failure.message);
        let d = self.driver();
        match self.inner.retry_policy.decide(lease, &failure) {
            FailDecision::Retry(delay) => {
                let p = JobFailRetry {
                    lease,
                    delay,
                    error: &error,
                    errors_kept: ERRORS_KEPT,
                };
                let changed = self
                    .retried("fail", || d.job_fail_retry(p))
                    .await
                    .map_err(|e| self.error(e))?;
                self.fenced(changed, lease).await?;
                if delay.is_zero() {
                    self.wake(&lease.queue, 1).await;
                } else {
                    self.places_freed(std::slice::from_ref(lease)).await;
                }
                Ok(FailOutcome::Retrying { after: delay })
            }
            FailDecision::Dead => {
                let p = JobFailDead {
                    lease,
                    error: &error,
                    errors_kept: ERRORS_KEPT,
                };
                let changed = self
                    .retried("fail", || d.job_fail_dead(p))
                    .await
                    .map_err(|e| self.error(e))?;
                self.fenced(changed, lease).await?;
                self.places_freed(std::slice::from_ref(lease)).await;
                if lease.workflow.is_some() {
                    self.settle_after(&[lease.job_id], true).await;
                }
                Ok(FailOutcome::Dead)
            }
        }
    }

    /// Gives the job back to run after a delay without spending the attempt, within the
    /// snooze bound; beyond it, the snooze is recorded as a failure.
    ///
    /// # Errors
    /// As [`Queue::snooze`](crate::Queue::snooze).
    #[tracing::instrument(name = "snooze", target = "queue::engine", level = "debug", skip_all, fields(job = %lease.job_id, queue = %lease.queue, attempt = lease.attempt))]
    pub async fn snooze(&self, lease: &Lease, snooze: Snooze) -> Result<SnoozeOutcome> {
        validate::delay(snooze.delay)?;
        validate::max_snoozes(snooze.max_snoozes)?;
        let p = JobSnooze {
            lease,
            delay: snooze.delay,
            max_snoozes: snooze.max_snoozes,
        };
        let changed = self
            .retried("snooze", || self.driver().job_snooze(p))
            .await
            .map_err(|e| self.error(e))?;
        if changed > 0 {
            if snooze.delay.is_zero() {
                self.wake(&lease.queue, 1).await;
            } else {
                self.places_freed(std::slice::from_ref(lease)).await;
            }
            return Ok(SnoozeOutcome::Snoozed);
        }
        // Nothing changed: the lease is gone, or the job used up its snoozes (then the lease
        // is still ours, and the job still running under it).
        let held = self
            .retried("snooze", || self.driver().job_meta_get(lease))
            .await
            .map_err(|e| self.error(e))?;
        if held.is_none() {
            return Err(self.lease_error(Target::Pool, lease).await);
        }
        let failure = Failure {
            message: format!(
                "snoozed {} times, the most allowed (max_snoozes)",
                snooze.max_snoozes
            ),
            kind: snooze.past_bound,
        };
        Ok(SnoozeOutcome::Failed(self.fail(lease, failure).await?))
    }

    /// Merges `patch` into the job's metadata under its lease.
    ///
    /// # Errors
    /// As [`Queue::merge_meta`](crate::Queue::merge_meta).
    pub async fn merge_meta(&self, lease: &Lease, patch: &Value) -> Result<Value> {
        if !patch.is_object() {
            return Err(Error::invalid("meta", "a merge must be a JSON object"));
        }
        let d = self.driver();
        // The write is fenced by the version read with the metadata: a merge that raced another
        // write of the row (another merge, a heartbeat) reads again and merges again.
        for _ in 0..META_ROUNDS {
            let stored = self
                .retried("merge_meta", || d.job_meta_get(lease))
                .await
                .map_err(|e| self.error(e))?;
            let Some(stored) = stored else {
                return Err(self.lease_error(Target::Pool, lease).await);
            };
            let mut meta = match stored.meta.as_deref() {
                Some(text) => serde_json::from_str(text).map_err(|e| {
                    Error::database(format!("stored meta of {} is not JSON: {e}", lease.job_id))
                })?,
                None => Value::Object(serde_json::Map::new()),
            };
            merge_patch(&mut meta, patch);
            let text = serde_json::to_string(&meta)?;
            validate::meta(&text, self.limits())?;
            let p = JobMetaSet {
                lease,
                version: stored.version,
                meta: &text,
            };
            let changed = self
                .retried("merge_meta", || d.job_meta_set(p))
                .await
                .map_err(|e| self.error(e))?;
            if changed > 0 {
                return Ok(meta);
            }
        }
        Err(Error::conflict(format!(
            "the metadata of {} changed under {META_ROUNDS} merges in a row",
            lease.job_id
        )))
    }

    /// Moves the lease's expiry to `by` from now.
    ///
    /// # Errors
    /// As [`Queue::extend`](crate::Queue::extend).
    pub async fn extend(&self, lease: &Lease, by: Duration) -> Result<Lease> {
        validate::lease("by", by)?;
        let expires = self
            .retried("extend", || self.driver().job_extend(lease, by))
            .await
            .map_err(|e| self.error(e))?;
        match expires {
            Some(expires_at) => Ok(Lease {
                expires_at,
                ..lease.clone()
            }),
            None => Err(self.lease_error(Target::Pool, lease).await),
        }
    }

    /// Gives the job back unstarted.
    ///
    /// # Errors
    /// As [`Queue::release`](crate::Queue::release).
    pub async fn release(&self, lease: &Lease) -> Result<()> {
        let changed = self
            .retried("release", || self.driver().job_release(lease))
            .await
            .map_err(|e| self.error(e))?;
        self.fenced(changed, lease).await?;
        self.wake(&lease.queue, 1).await;
        Ok(())
    }

    /// Returns expired leases to pending, or dead when their attempts are used up.
    ///
    /// # Errors
    /// As [`Queue::rescue_expired`](crate::Queue::rescue_expired).
    pub async fn rescue_expired(&self) -> Result<u64> {
        let d = self.driver();
        let mut total = 0;
        loop {
            let expired = self
                .retried("rescue", || d.job_expired(RESCUE_CHUNK))
                .await
                .map_err(|e| self.error(e))?;
            if expired.is_empty() {
                break;
            }
            let (retry, dead): (Vec<&Expired>, Vec<&Expired>) =
                expired.iter().partition(|x| x.attempts < x.max_attempts);
            let mut round = 0;
            for (jobs, to_dead) in [(&retry, false), (&dead, true)] {
                if jobs.is_empty() {
                    continue;
                }
                let ids: Vec<_> = jobs.iter().map(|x| (x.id, x.token)).collect();
                let p = JobRescue {
                    jobs: &ids,
                    dead: to_dead,
                    error: LEASE_EXPIRED,
                    errors_kept: ERRORS_KEPT,
                };
                round += self
                    .retried("rescue", || d.job_rescue(p))
                    .await
                    .map_err(|e| self.error(e))?;
            }
            total += round;
            for (queue, n) in count_by(retry.iter().map(|x| x.queue.as_str())) {
                self.wake(queue, n).await;
            }
            // The jobs that died here may be dependencies in a workflow (one probe of the
            // dependencies' index when they are not).
            let died: Vec<_> = dead.iter().map(|x| x.id).collect();
            self.settle_after(&died, true).await;
            // A short read was the last one; a round that moved nothing would only repeat.
            if expired.len() < RESCUE_CHUNK || round == 0 {
                break;
            }
        }
        if total > 0 {
            tracing::info!(target: LOG_TARGET, rescued = total, "rescued jobs with expired leases");
        }
        Ok(total)
    }
}

/// The jobs of `leases` that are steps of workflows.
fn workflow_jobs(leases: &[Lease]) -> Vec<crate::job::JobId> {
    leases
        .iter()
        .filter(|l| l.workflow.is_some())
        .map(|l| l.job_id)
        .collect()
}
