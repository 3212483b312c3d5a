//! The dispatcher: keeps several claims in flight, holds claimed jobs in a bounded local buffer,
//! and starts them as handler slots free up. It sizes its claims itself, from what it
//! observes, within the bounds the worker's settings give.
//!
//! - **Claim size**: starts at the queue's concurrency; doubles after each claim that came back
//!   full (the queue has a backlog), up to `prefetch` (default: the backend's `max_pop`) and to
//!   what the slots run in [`BUFFER_HORIZON`] (at most a quarter of the lease) at the pace its
//!   jobs have held a slot lately, so that no buffered job waits long enough for its lease to
//!   run short, and a worker does not hoard a long backlog of slow jobs other workers could
//!   run; falls back to the concurrency as soon as a claim finds the queue drained. A claim
//!   never asks for more than there is room for: free slots plus free buffer places, less what
//!   claims in flight already asked for; at least half the claim size unless the worker has
//!   nothing else to run. So a worker never holds more than `concurrency + prefetch` jobs in
//!   memory (running, buffered, or being claimed). The queue's controls (pause, limits, rate
//!   limits, keys) bound every claim in the database whatever its size.
//! - **Claims in flight**: at most the worker's `pop_concurrency`, by default enough for the
//!   slots and the buffer to be refilled by claims of half the claim size, capped at 16. The
//!   number actually in flight adapts: it grows by one after each claim that came back full,
//!   and drops back to one as soon as a claim finds the queue drained.
//! - **Buffer**: at most one claim size of claimed jobs wait for a slot. A job's lease keeps
//!   running while it waits; when a slot frees, a job that waited so long that its lease would
//!   expire before the first heartbeat has its lease extended before its handler starts, and a
//!   job whose lease was lost meanwhile is dropped unstarted (it belongs to someone else now).
//! - **Idle**: a claim that finds the queue empty is followed by no other claim until a wake-up
//!   or the (adaptive, jittered) poll interval: an idle worker issues one claim per interval.
//! - **Shutdown**: no new claim starts; claims in flight are awaited and everything claimed but
//!   not started (buffered or just returned) is released, its attempt not counted.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use std::panic::AssertUnwindSafe;

use futures::FutureExt;

use super::runtime::{jitter, panic_message, release_all, run_job, Lane, Shared};
use super::LOG_TARGET;
use crate::error::{Error, Result};
use crate::job::{Lease, Leased};
use crate::queue::{CheckedPop, PopRequest};
use std::sync::atomic::Ordering;

/// The first and the longest pause after a failed claim.
const CLAIM_BACKOFF_MIN: Duration = Duration::from_millis(100);
const CLAIM_BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Most claims in flight when the worker does not set `pop_concurrency`.
pub(super) const AUTO_CLAIMS_MAX: usize = 16;
/// How much work, at the pace the queue's jobs have held a slot, a claim may take beyond what
/// runs at once (at most a quarter of the lease): more would keep jobs from other workers for
/// longer, and buys nothing once a claim's round trip is small beside the work it brings.
pub(super) const BUFFER_HORIZON: Duration = Duration::from_secs(1);

/// A claimed job waiting for a slot, with when its claim was made.
pub(super) struct Buffered {
    pub(super) leased: Leased,
    pub(super) claimed_at: Instant,
}

/// What a finished claim hands back: how many jobs it asked for, when it started, the
/// completions it took along, and the outcome (the outer error: nothing was done; the inner:
/// the completions stand and the claim failed).
struct Claimed {
    asked: usize,
    started: Instant,
    acks: Vec<Lease>,
    outcome: Result<(u64, Result<Vec<Leased>>)>,
}

/// The dispatcher's state between events.
struct Dispatcher {
    shared: Arc<Shared>,
    /// The queue it claims from, and that queue's slots.
    lane: Arc<Lane>,
    request: CheckedPop,
    buffer: VecDeque<Buffered>,
    /// Claims in flight.
    claims: JoinSet<Claimed>,
    /// Jobs the claims in flight asked for.
    asked: usize,
    /// How many claims may be in flight now (adapts between 1 and `max_claims()`).
    target: usize,
    /// How many jobs a claim asks for now, and how many may wait in the buffer (adapts between
    /// the concurrency, or less, and `batch_cap()`).
    batch: usize,
    /// The last claim found the queue drained: claim again after a wake-up or the interval.
    drained: bool,
    /// The next wait when the queue is drained (doubles up to the poll maximum).
    idle: Duration,
    /// No claim starts before this (after a failed claim).
    paused_until: Option<Instant>,
    backoff: Duration,
}

/// How many claims may be in flight at most with claims of `batch` jobs: `pop_concurrency`
/// when set, else enough to fill the slots and the buffer with claims of half that.
pub(super) fn max_claims(lane: &Lane, batch: usize) -> usize {
    let cfg = &lane.config;
    let batch = batch.max(1);
    cfg.pop_concurrency.unwrap_or_else(|| {
        (2 * (lane.concurrency() + batch))
            .div_ceil(batch)
            .clamp(1, AUTO_CLAIMS_MAX)
    })
}

/// The largest claim a lane may make now: its `prefetch`, and no more than its slots run in
/// [`BUFFER_HORIZON`] (at most a quarter of `lease`) at the pace its jobs held a slot lately;
/// the concurrency until a first job has run.
pub(super) fn batch_cap(lane: &Lane, lease: Duration) -> usize {
    let cfg = &lane.config;
    let horizon = BUFFER_HORIZON.min(lease / 4);
    let concurrency = lane.concurrency();
    let by_pace = match lane.pace.mean() {
        None => concurrency,
        Some(mean) => {
            let runs = horizon.as_secs_f64() / mean.as_secs_f64().max(1e-9);
            let jobs = (concurrency as f64 * runs).min(usize::MAX as f64) as usize;
            jobs.max(concurrency)
        }
    };
    cfg.prefetch.min(by_pace).max(1)
}

/// Runs until the worker stops; then gives back every job claimed but not started.
pub(super) async fn dispatch(
    shared: Arc<Shared>,
    lane: Arc<Lane>,
    mut stop: watch::Receiver<bool>,
) {
    let cfg = &shared.config;
    let name = &lane.config.name;
    let limits = &shared.queue.capabilities().limits;
    // Validated once here; each claim only checks its limit again.
    let request = match CheckedPop::new(
        PopRequest {
            queue: name.clone(),
            limit: lane.config.prefetch,
            lease: cfg.lease,
            worker: cfg.worker_id.clone(),
        },
        limits,
    ) {
        Ok(request) => request,
        Err(error) => {
            tracing::error!(target: LOG_TARGET, queue = %name, %error, "cannot claim");
            return;
        }
    };
    let batch = lane.concurrency().min(lane.config.prefetch).max(1);
    shared.claiming.fetch_add(batch, Ordering::Relaxed);
    let mut d = Dispatcher {
        batch,
        shared: shared.clone(),
        lane: lane.clone(),
        request,
        buffer: VecDeque::new(),
        claims: JoinSet::new(),
        asked: 0,
        target: 1,
        drained: false,
        idle: cfg.poll_min,
        paused_until: None,
        backoff: CLAIM_BACKOFF_MIN,
    };
    loop {
        d.start_buffered();
        d.launch_claims();
        let waiting_for_slot = !d.buffer.is_empty();
        let idle = d.claims.is_empty() && d.buffer.is_empty();
        if idle && d.drained {
            shared.acks.hurry();
        }
        let pause = d.paused_until;
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            Some(done) = d.claims.join_next(), if !d.claims.is_empty() => match done {
                Ok(claimed) => d.claimed(claimed),
                Err(e) => tracing::error!(target: LOG_TARGET, error = %e, "claim task failed"),
            },
            permit = lane.permits.clone().acquire_owned(), if waiting_for_slot => {
                if let Ok(permit) = permit {
                    if let Some(job) = d.buffer.pop_front() {
                        d.start(job, permit);
                    }
                }
            }
            _ = sleep_until_opt(pause), if pause.is_some() && d.claims.is_empty() => {
                d.paused_until = None;
            }
            _ = shared.queue.wait_for_work(name, jitter(d.idle)), if idle && d.drained && pause.is_none() => {
                // Woken by a push, or the interval passed: claim once more.
                d.drained = false;
                d.idle = (d.idle * 2).min(cfg.poll_max);
            }
        }
    }
    shared.claiming.fetch_sub(d.batch, Ordering::Relaxed);
    d.finish().await;
    tracing::debug!(target: LOG_TARGET, queue = %name, "dispatcher stopped");
}

/// Counts the completions a claim took along: `acked` of `sent` were completed, the others'
/// leases were lost meanwhile.
fn count_acks(shared: &Shared, sent: &[Lease], acked: u64) {
    let acked = acked.min(sent.len() as u64);
    shared.counters.add_completed(acked);
    let lost = sent.len() as u64 - acked;
    if lost > 0 {
        shared.lease_lost(super::runtime::one_queue(sent), lost);
        tracing::info!(target: LOG_TARGET, lost, "acks skipped: leases no longer held");
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Dispatcher {
    /// Starts buffered jobs while slots are free.
    fn start_buffered(&mut self) {
        while !self.buffer.is_empty() {
            let Ok(permit) = self.lane.permits.clone().try_acquire_owned() else {
                return;
            };
            if let Some(job) = self.buffer.pop_front() {
                self.start(job, permit);
            }
        }
    }

    /// Runs `job` in the slot `permit` holds, and takes in how long it held the slot.
    fn start(&self, job: Buffered, permit: tokio::sync::OwnedSemaphorePermit) {
        let (shared, lane) = (self.shared.clone(), self.lane.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let abort = lane.abort.subscribe();
            run_job(shared, job, permit, abort).await;
            lane.pace.record(started.elapsed());
        });
    }

    /// Room for more claimed jobs: free slots and free buffer places, less what is asked for.
    fn room(&self) -> usize {
        (self.lane.permits.available_permits() + self.batch)
            .saturating_sub(self.buffer.len() + self.asked)
    }

    /// Sets the claim size to `batch`, within its cap, and tells the acknowledger.
    fn resize(&mut self, batch: usize) {
        let cap = batch_cap(&self.lane, self.shared.config.lease);
        let batch = batch.clamp(1, cap);
        if batch != self.batch {
            let claiming = &self.shared.claiming;
            claiming.fetch_add(batch, Ordering::Relaxed);
            claiming.fetch_sub(self.batch, Ordering::Relaxed);
            self.batch = batch;
        }
    }

    /// Starts claims while there is room, the target allows, and the queue is not known empty.
    fn launch_claims(&mut self) {
        if self.drained || self.paused_until.is_some() {
            return;
        }
        // The pace may have slowed since the size was chosen.
        self.resize(self.batch);
        let batch = self.batch;
        while self.claims.len() < self.target {
            let n = self.room().min(batch);
            // Claims stay large (at least half the claim size) unless the worker would
            // otherwise sit idle: nothing claimed, nothing buffered.
            let starving = self.claims.is_empty() && self.buffer.is_empty();
            if n == 0 || (n < batch.div_ceil(2) && !starving) {
                return;
            }
            let request = match self
                .request
                .with_limit(n, &self.shared.queue.capabilities().limits)
            {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(target: LOG_TARGET, error = %e, "cannot claim");
                    return;
                }
            };
            let queue = self.shared.queue.clone();
            // Completions waiting to be acknowledged go along: one round trip for both where
            // the backend can.
            let acks = self.shared.acks.take(self.shared.config.ack_batch);
            self.asked += n;
            self.claims.spawn(async move {
                let started = Instant::now();
                let claim = async {
                    if acks.is_empty() {
                        Ok((0, queue.pop_checked(&request).await))
                    } else {
                        queue.ack_batch_and_pop(&acks, &request).await
                    }
                };
                // A panic in the queue's code is a failed claim like any other: the claim's
                // size is given back to `room` and the completions to the acknowledger (which
                // counts any it finds already done as lost leases).
                let outcome =
                    AssertUnwindSafe(claim)
                        .catch_unwind()
                        .await
                        .unwrap_or_else(|payload| {
                            Err(Error::database(format!(
                                "the claim panicked: {}",
                                panic_message(payload.as_ref())
                            )))
                        });
                Claimed {
                    asked: n,
                    started,
                    acks,
                    outcome,
                }
            });
        }
    }

    /// Takes in what a claim returned.
    fn claimed(&mut self, claimed: Claimed) {
        self.asked -= claimed.asked;
        let shared = self.shared.clone();
        let cfg = &shared.config;
        let result = match claimed.outcome {
            Ok((acked, result)) => {
                count_acks(&self.shared, &claimed.acks, acked);
                result
            }
            Err(e) => {
                // Nothing was done: the completions go back to the acknowledger.
                self.shared.acks.put_back(claimed.acks);
                Err(e)
            }
        };
        let jobs = match result {
            Ok(jobs) => {
                self.backoff = CLAIM_BACKOFF_MIN;
                jobs
            }
            Err(e) => {
                self.shared.counters.add_pop_error();
                tracing::warn!(
                    target: LOG_TARGET,
                    queue = %self.lane.config.name,
                    error = %e,
                    retry_in_ms = self.backoff.as_millis() as u64,
                    "claim failed; backing off"
                );
                self.paused_until = Some(Instant::now() + jitter(self.backoff));
                self.backoff = (self.backoff * 2).min(CLAIM_BACKOFF_MAX.max(cfg.poll_max));
                self.target = 1;
                self.resize(self.lane.concurrency());
                return;
            }
        };
        let got = jobs.len();
        self.shared.counters.add_claim(got as u64);
        if got > claimed.asked {
            tracing::error!(
                target: LOG_TARGET,
                queue = %self.lane.config.name,
                asked = claimed.asked,
                got,
                "claim returned more jobs than asked for; releasing the surplus"
            );
        }
        let mut jobs = jobs.into_iter();
        for leased in jobs.by_ref().take(claimed.asked) {
            self.buffer.push_back(Buffered {
                leased,
                claimed_at: claimed.started,
            });
        }
        let surplus: Vec<Leased> = jobs.collect();
        if !surplus.is_empty() {
            let shared = self.shared.clone();
            tokio::spawn(async move { release_all(&shared, surplus).await });
        }
        if got >= claimed.asked {
            // A full claim: there is probably more; larger claims, and one more in flight.
            self.drained = false;
            self.idle = cfg.poll_min;
            if claimed.asked >= self.batch.div_ceil(2) {
                self.resize(self.batch.saturating_mul(2));
            }
            self.target = (self.target + 1).min(max_claims(&self.lane, self.batch));
        } else {
            // The queue is drained for now: the next claim waits for a wake-up or, when this
            // one found nothing at all, the growing idle interval; and is small again.
            self.drained = true;
            self.target = 1;
            self.resize(self.lane.concurrency());
            if got > 0 {
                self.idle = cfg.poll_min;
            }
        }
    }

    /// At shutdown: releases every job not started, those buffered at once and each claim's
    /// in flight as it returns (a slow claim does not hold back the others' releases).
    async fn finish(mut self) {
        let unstarted: Vec<Leased> = self.buffer.drain(..).map(|b| b.leased).collect();
        if !unstarted.is_empty() {
            release_all(&self.shared, unstarted).await;
        }
        while let Some(done) = self.claims.join_next().await {
            if let Ok(claimed) = done {
                self.asked -= claimed.asked;
                let result = match claimed.outcome {
                    Ok((acked, result)) => {
                        count_acks(&self.shared, &claimed.acks, acked);
                        result
                    }
                    Err(e) => {
                        self.shared.acks.put_back(claimed.acks);
                        Err(e)
                    }
                };
                if let Ok(jobs) = result {
                    self.shared.counters.add_claim(jobs.len() as u64);
                    if !jobs.is_empty() {
                        release_all(&self.shared, jobs).await;
                    }
                }
            }
        }
    }
}
