//! The engine's rules for queue controls (pause, resume, a global concurrency limit).
//!
//! Every claim statement of every dialect gives out nothing of a queue whose row in the
//! `queues` table says paused or limited: that check runs inside the claim, so a pause is seen
//! by the first claim that starts after it committed, in every process. A queue known to be
//! controlled is claimed on the controlled path instead: one transaction of the driver's that
//! locks the queue's row (so controlled claims of one queue take turns across processes), reads
//! pause and limit under that lock, counts the queue's live leases in a statement that starts
//! after the lock was granted (so it sees every claim that held the lock before), and claims at
//! most the room left. Nothing is counted outside the database: an expired lease stops counting
//! at its expiry, whether or not anyone rescued it yet.
//!
//! Which path a claim takes is a per-process guess kept in memory and corrected as claims go:
//! an ordinary claim that gives out nothing looks at the queue's row once (it may be the check
//! that refused), and the controlled path reads the row anyway. A wrong guess costs one round
//! trip, never a job given out against the controls.

use std::time::Duration;

use super::{sort_claimed, Driver, Engine, JobClaim, RateState, LOG_TARGET};
use crate::error::{Error, Result};
use crate::job::Leased;
use crate::queue::{QueueControl, QueueStats, RateLimit, MAX_CONCURRENCY_LIMIT};
use crate::validate;

/// The window a claim under `rate` falls in (by the database's clock in `state`) and how many
/// jobs already started in it.
fn rate_used(rate: RateLimit, state: RateState) -> (i64, u32) {
    let window = state.now_us.div_euclid(rate.period_us());
    let used = if state.window == Some(window) {
        state.count
    } else {
        0
    };
    (window, used)
}

/// The window and count to record after a claim that counted `used` starts in `window` before
/// it and gave out `jobs`. Each job is counted in the window of its own start (its lease's
/// expiry less the lease, both by the database's clock), so a claim that began just before a
/// window ended and started its jobs after it counts them in the next one, where they fall.
fn rate_after_claim(
    rate: RateLimit,
    window: i64,
    used: u32,
    jobs: &[Leased],
    lease: Duration,
) -> (i64, u32) {
    let period = rate.period_us();
    let lease_us = i64::try_from(lease.as_micros()).unwrap_or(i64::MAX);
    let (mut window, mut count) = (window, used);
    for job in jobs {
        let start = job
            .lease
            .expires_at
            .timestamp_micros()
            .saturating_sub(lease_us);
        let w = start.div_euclid(period).max(window);
        if w > window {
            (window, count) = (w, 0);
        }
        count = count.saturating_add(1);
    }
    (window, count)
}

impl<D: Driver> Engine<D> {
    /// Whether claims of `queue` took the controlled path last time this process looked.
    pub(super) fn known_controlled(&self, queue: &str) -> bool {
        self.inner
            .controlled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(queue)
    }

    fn remember_controls(&self, queue: &str, controlled: bool) {
        let mut known = self
            .inner
            .controlled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if controlled {
            if !known.contains(queue) {
                known.insert(queue.to_owned());
            }
        } else {
            known.remove(queue);
        }
    }

    /// After an ordinary claim of `p.queue` gave out nothing (its statement may have refused
    /// a paused or limited queue): looks at the queue's row once and, when it is controlled,
    /// claims on the controlled path; otherwise the queue really had nothing due.
    pub(super) async fn claim_if_controlled(&self, p: JobClaim<'_>) -> Result<Vec<Leased>> {
        let control = self
            .driver()
            .queue_control_get(p.queue)
            .await
            .map_err(|e| self.error(e))?;
        let controlled = control.as_ref().is_some_and(QueueControl::restricts);
        self.remember_controls(p.queue, controlled);
        if controlled {
            self.claim_controlled(p).await
        } else {
            Ok(Vec::new())
        }
    }

    /// The controlled claim (see the module's docs), tried again after lock conflicts.
    pub(super) async fn claim_controlled(&self, p: JobClaim<'_>) -> Result<Vec<Leased>> {
        let (control, mut jobs) = self
            .retried("controlled claim", || self.claim_controlled_once(p))
            .await
            .map_err(|e| self.error(e))?;
        self.remember_controls(
            p.queue,
            control.as_ref().is_some_and(QueueControl::restricts),
        );
        sort_claimed(&mut jobs);
        Ok(jobs)
    }

    async fn claim_controlled_once(
        &self,
        p: JobClaim<'_>,
    ) -> std::result::Result<(Option<QueueControl>, Vec<Leased>), D::Error> {
        let d = self.driver();
        let mut tx = d.tx_begin().await?;
        let claimed = async {
            let conn = D::tx_conn(&mut tx);
            let control = d.queue_control_lock(conn, p.queue).await?;
            let Some(c) = control.as_ref().filter(|c| !c.paused) else {
                // Paused (no job), or no row at all (every job the claim asks for).
                let jobs = if control.is_some() {
                    Vec::new()
                } else {
                    d.job_claim_in(
                        conn,
                        JobClaim {
                            controls_checked: true,
                            ..p
                        },
                    )
                    .await?
                };
                return Ok((control, jobs));
            };
            let mut room = p.limit;
            if let Some(limit) = c.concurrency_limit {
                let live = d.job_live_leases(conn, p.queue).await?;
                let left = u64::from(limit).saturating_sub(live);
                room = room.min(usize::try_from(left).unwrap_or(usize::MAX));
            }
            let rate = match (c.rate_limit, room) {
                (Some(r), 1..) => {
                    let state = d.queue_rate_state(conn, p.queue).await?;
                    let (window, used) = rate_used(r, state);
                    let left = r.limit.saturating_sub(used);
                    room = room.min(left as usize);
                    if left == 0 {
                        self.wake_at_next_window(p.queue, r, state.now_us);
                    }
                    Some((r, window, used))
                }
                _ => None,
            };
            let jobs = if room == 0 {
                Vec::new()
            } else {
                d.job_claim_in(
                    conn,
                    JobClaim {
                        limit: room,
                        controls_checked: true,
                        ..p
                    },
                )
                .await?
            };
            if let (Some((r, window, used)), false) = (rate, jobs.is_empty()) {
                let (window, count) = rate_after_claim(r, window, used, &jobs, p.lease);
                d.queue_rate_record(conn, p.queue, window, count).await?;
            }
            Ok((control, jobs))
        }
        .await;
        match claimed {
            Ok(done) => {
                d.tx_commit(tx).await?;
                Ok(done)
            }
            Err(e) => {
                if let Err(rollback) = d.tx_rollback(tx).await {
                    tracing::debug!(target: LOG_TARGET, error = %rollback, "rollback after a failed controlled claim failed");
                }
                Err(e)
            }
        }
    }

    /// A claim of `queue` found its rate window full: wakes this process's workers of the
    /// queue when the next window opens (by the database's clock `now_us`), once however many
    /// claims found it full, instead of leaving them to poll.
    fn wake_at_next_window(&self, queue: &str, rate: RateLimit, now_us: i64) {
        let period = rate.period_us();
        let next = now_us
            .div_euclid(period)
            .saturating_add(1)
            .saturating_mul(period);
        let wait = Duration::from_micros(u64::try_from(next - now_us).unwrap_or(0));
        {
            let mut throttled = self
                .inner
                .throttled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !throttled.insert(queue.to_owned()) {
                return;
            }
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let hub = self.inner.hub.clone();
        let throttled = self.inner.throttled.clone();
        let queue = queue.to_owned();
        tracing::debug!(target: LOG_TARGET, queue, wait_ms = wait.as_millis() as u64, "rate limit reached; claims wait for the next window");
        runtime.spawn(async move {
            tokio::time::sleep(wait).await;
            throttled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&queue);
            hub.notify(&queue, usize::MAX);
        });
    }

    /// After jobs of `leases` finished: a queue with a concurrency limit has room again, so its
    /// workers waiting for work are woken (here at once, elsewhere through the driver's
    /// notifications where it has them) instead of sleeping until their next poll.
    pub(super) async fn places_freed(&self, leases: &[crate::job::Lease]) {
        let mut queues: Vec<&str> = leases.iter().map(|l| l.queue.as_str()).collect();
        queues.sort_unstable();
        queues.dedup();
        for queue in queues {
            if self.known_controlled(queue) {
                let n = leases.iter().filter(|l| l.queue == queue).count();
                self.wake(queue, n).await;
            }
        }
    }

    /// Pauses `queue`.
    ///
    /// # Errors
    /// As [`crate::Queue::pause`].
    pub async fn pause(&self, queue: &str) -> Result<()> {
        validate::queue_name(queue)?;
        self.retried("pause", || self.driver().queue_set_paused(queue, true))
            .await
            .map_err(|e| self.error(e))?;
        self.remember_controls(queue, true);
        Ok(())
    }

    /// Resumes `queue` and wakes its workers.
    ///
    /// # Errors
    /// As [`crate::Queue::resume`].
    pub async fn resume(&self, queue: &str) -> Result<()> {
        validate::queue_name(queue)?;
        self.retried("resume", || self.driver().queue_set_paused(queue, false))
            .await
            .map_err(|e| self.error(e))?;
        self.wake(queue, usize::MAX).await;
        Ok(())
    }

    /// Sets or removes the concurrency limit of `queue`.
    ///
    /// # Errors
    /// As [`crate::Queue::set_concurrency_limit`].
    pub async fn set_concurrency_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        validate::queue_name(queue)?;
        match limit {
            Some(0) => {
                return Err(Error::invalid(
                    "concurrency_limit",
                    "must be at least 1 (pause the queue to stop it)",
                ))
            }
            Some(n) if n > MAX_CONCURRENCY_LIMIT => {
                return Err(Error::invalid(
                    "concurrency_limit",
                    format!("must be at most {MAX_CONCURRENCY_LIMIT} (got {n})"),
                ))
            }
            _ => {}
        }
        self.retried("set_concurrency_limit", || {
            self.driver().queue_set_limit(queue, limit)
        })
        .await
        .map_err(|e| self.error(e))?;
        if limit.is_some() {
            self.remember_controls(queue, true);
        }
        // A higher limit, or none, may leave room for jobs that were waiting.
        self.wake(queue, usize::MAX).await;
        Ok(())
    }

    /// Sets or removes the rate limit of `queue`.
    ///
    /// # Errors
    /// As [`crate::Queue::set_rate_limit`].
    pub async fn set_rate_limit(&self, queue: &str, rate: Option<RateLimit>) -> Result<()> {
        validate::queue_name(queue)?;
        if let Some(r) = &rate {
            r.validate()?;
        }
        let stored = rate.map(|r| (r.limit, r.period_us()));
        self.retried("set_rate_limit", || {
            self.driver().queue_set_rate(queue, stored)
        })
        .await
        .map_err(|e| self.error(e))?;
        if rate.is_some() {
            self.remember_controls(queue, true);
        }
        self.wake(queue, usize::MAX).await;
        Ok(())
    }

    /// Every queue that is paused or limited.
    ///
    /// # Errors
    /// As [`crate::Queue::controls`].
    pub async fn controls(&self) -> Result<Vec<QueueControl>> {
        let mut all = self
            .driver()
            .queue_control_list()
            .await
            .map_err(|e| self.error(e))?;
        all.retain(QueueControl::restricts);
        Ok(all)
    }

    /// `stats` with each queue's controls, and a line for every controlled queue without jobs
    /// (when all queues are asked for).
    pub(super) async fn with_controls(
        &self,
        queue: Option<&str>,
        mut stats: Vec<QueueStats>,
    ) -> Result<Vec<QueueStats>> {
        let controls = match queue {
            Some(q) => self
                .driver()
                .queue_control_get(q)
                .await
                .map_err(|e| self.error(e))?
                .into_iter()
                .collect(),
            None => self.controls().await?,
        };
        for c in controls.into_iter().filter(QueueControl::restricts) {
            match stats.iter_mut().find(|s| s.queue == c.queue) {
                Some(s) => {
                    s.paused = c.paused;
                    s.concurrency_limit = c.concurrency_limit;
                    s.rate_limit = c.rate_limit;
                }
                None => stats.push(QueueStats {
                    queue: c.queue,
                    paused: c.paused,
                    concurrency_limit: c.concurrency_limit,
                    rate_limit: c.rate_limit,
                    ..QueueStats::default()
                }),
            }
        }
        stats.sort_by(|a, b| a.queue.cmp(&b.queue));
        Ok(stats)
    }
}
