//! Claiming: the strategy's claim statement, or the optimistic claim's rounds.

use std::sync::atomic::Ordering;

use super::cursor::ClaimStart;
use super::{
    sort_claimed, Driver, Engine, JobClaim, CONTENTION_MEMORY, LOG_TARGET, OPTIMISTIC_ROUNDS,
};
use crate::error::Result;
use crate::job::Leased;
use crate::queue::{CheckedPop, ClaimStrategy, PopRequest};
use crate::validate;

impl<D: Driver> Engine<D> {
    /// Validates `req` and claims.
    ///
    /// # Errors
    /// As [`Queue::pop`](crate::Queue::pop).
    pub async fn pop(&self, req: PopRequest) -> Result<Vec<Leased>> {
        let checked = CheckedPop::new(req, self.limits())?;
        self.pop_checked(&checked).await
    }

    /// Claims with a request that was validated before.
    ///
    /// # Errors
    /// As [`Queue::pop`](crate::Queue::pop).
    #[tracing::instrument(
        name = "claim",
        target = "queue::engine",
        level = "debug",
        skip_all,
        fields(queue = %req.request().queue, limit = req.request().limit, claimed)
    )]
    pub async fn pop_checked(&self, req: &CheckedPop) -> Result<Vec<Leased>> {
        let started = std::time::Instant::now();
        let claimed = self.claim_checked(req).await;
        self.count_claim(&req.request().queue, started, &claimed);
        if let Ok(jobs) = &claimed {
            tracing::Span::current().record("claimed", jobs.len());
        }
        claimed
    }

    /// Records a claim of `queue` that began at `started` in `dbqueue_claim_seconds` and the
    /// jobs it gave out in `dbqueue_jobs_claimed_total` (a failed claim in neither).
    pub(super) fn count_claim(
        &self,
        queue: &str,
        started: std::time::Instant,
        claimed: &Result<Vec<Leased>>,
    ) {
        if let Ok(jobs) = claimed {
            let m = self.inner.metrics.queue(queue);
            m.claim.record(started.elapsed().as_secs_f64());
            if !jobs.is_empty() {
                m.claimed.increment(jobs.len() as u64);
            }
        }
    }

    async fn claim_checked(&self, req: &CheckedPop) -> Result<Vec<Leased>> {
        let req = req.request();
        // The request was checked against some queue's limits; this queue's may be tighter.
        validate::pop_limit(req.limit, self.limits())?;
        let p = JobClaim {
            queue: &req.queue,
            limit: req.limit,
            lease: req.lease,
            worker: &req.worker,
            controls_checked: false,
            after: None,
        };
        if self.known_controlled(p.queue) {
            return self.claim_controlled(p).await;
        }
        let mut jobs = match self.inner.caps.claim {
            ClaimStrategy::Optimistic => self.claim_optimistic(p).await?,
            _ => {
                let start = self.claim_start(p.queue);
                let p = JobClaim {
                    after: start.after,
                    ..p
                };
                let jobs = self
                    .retried("claim", || self.driver().job_claim(p))
                    .await
                    .map_err(|e| self.error(e))?;
                self.claimed_from(p, start, jobs)
            }
        };
        if jobs.is_empty() {
            return self.claim_if_controlled(p).await;
        }
        sort_claimed(&mut jobs);
        tracing::trace!(target: LOG_TARGET, queue = %req.queue, claimed = jobs.len(), "pop");
        Ok(jobs)
    }

    /// Where a claim of `queue` starts: from the queue's position where the driver claims
    /// from one (`cursor`).
    pub(super) fn claim_start(&self, queue: &str) -> ClaimStart {
        if self.driver().claims_after() {
            self.inner.cursors.start(queue)
        } else {
            ClaimStart::HEAD
        }
    }

    /// Records what a claim `p` that began at `start` got, for where the next claim of the
    /// queue starts (`cursor`).
    pub(super) fn claimed_from(
        &self,
        p: JobClaim<'_>,
        start: ClaimStart,
        jobs: Vec<Leased>,
    ) -> Vec<Leased> {
        if self.driver().claims_after() {
            self.inner.cursors.record(p.queue, start, p.limit, &jobs);
        }
        jobs
    }

    /// The optimistic claim: read due candidates without locks, then claim them guarded by
    /// their versions; what others took first is simply not ours. A claimer that lost races
    /// lately reads a wider window of due jobs and tries them in random order, so concurrent
    /// claimers spread out instead of all chasing the head of the queue; an uncontended claimer
    /// keeps the exact claim order.
    async fn claim_optimistic(&self, p: JobClaim<'_>) -> Result<Vec<Leased>> {
        let d = self.driver();
        let contention = &self.inner.contention;
        let mut claimed = Vec::new();
        for _ in 0..OPTIMISTIC_ROUNDS {
            let want = p.limit - claimed.len();
            let contended = contention.load(Ordering::Relaxed) > 0;
            let fetch = if contended { want * 2 + 16 } else { want };
            let mut candidates = d
                .job_candidates(JobClaim { limit: fetch, ..p })
                .await
                .map_err(|e| self.error(e))?;
            if candidates.is_empty() {
                break;
            }
            if contended {
                fastrand::shuffle(&mut candidates);
            }
            candidates.truncate(want);
            let tried = candidates.len();
            let won = match d
                .job_claim_candidates(JobClaim { limit: tried, ..p }, candidates)
                .await
            {
                Ok(won) => won,
                // The statement was rolled back as a whole: nothing of it is ours.
                Err(e) if self.is_lock_conflict(&e) => Vec::new(),
                Err(e) => return Err(self.error(e)),
            };
            let all_won = won.len() == tried;
            claimed.extend(won);
            if all_won {
                // A claimer that stops losing returns to the exact order.
                let _ = contention
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| c.checked_sub(1));
                // Every job tried was won: the limit is reached or nothing more is due.
                break;
            }
            contention.store(CONTENTION_MEMORY, Ordering::Relaxed);
            if claimed.len() >= p.limit {
                break;
            }
        }
        Ok(claimed)
    }
}
