//! Live counters of a running worker and the report it returns when it stops.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Live counts of what a worker did, updated as it goes (cheap atomics, safe to read from a
/// progress bar at any time).
///
/// Every claimed job ends in exactly one of `completed`, `retried`, `dead`, `snoozed`,
/// `released`, `lease_lost` or `abandoned`; `panicked` counts the failures that were panics (they are also
/// counted in `retried` or `dead`).
#[derive(Debug, Default)]
pub struct Counters {
    claimed: AtomicU64,
    claims: AtomicU64,
    largest_claim: AtomicU64,
    completed: AtomicU64,
    retried: AtomicU64,
    dead: AtomicU64,
    snoozed: AtomicU64,
    panicked: AtomicU64,
    lease_lost: AtomicU64,
    released: AtomicU64,
    abandoned: AtomicU64,
    pop_errors: AtomicU64,
    rescued: AtomicU64,
    restarted: AtomicU64,
}

macro_rules! getters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            pub fn $name(&self) -> u64 {
                self.$name.load(Ordering::Relaxed)
            }
        )*
    };
}

impl Counters {
    getters! {
        /// Jobs claimed by this worker.
        claimed,
        /// Claims that gave out at least one job (`claimed / claims` is their mean size).
        claims,
        /// The most jobs one claim gave out.
        largest_claim,
        /// Jobs completed (acked while the lease was still current).
        completed,
        /// Failed jobs sent back to pending for another attempt.
        retried,
        /// Failed jobs that went dead (permanent failure or attempts used up).
        dead,
        /// Jobs whose handler snoozed them: back to pending for later, the attempt not spent.
        snoozed,
        /// Handlers that panicked (each also counted in `retried` or `dead`).
        panicked,
        /// Jobs whose lease was lost or that were cancelled while held: they belong to someone
        /// else now, and this worker's outcome was not recorded.
        lease_lost,
        /// Jobs given back unstarted or unfinished at shutdown, their attempt not counted.
        released,
        /// Jobs whose final transition failed on a database error; they stay running until
        /// their lease expires and the rescuer returns them to pending.
        abandoned,
        /// Pops that failed (the worker backed off and retried).
        pop_errors,
        /// Expired leases this worker's rescuer returned to pending or dead.
        rescued,
        /// Times one of the worker's own tasks (claims, acknowledgements, rescue) panicked and
        /// was started again.
        restarted,
    }

    /// Jobs claimed that have not reached an outcome yet (running, or waiting for their ack).
    pub fn in_flight(&self) -> u64 {
        let s = self.snapshot();
        s.claimed.saturating_sub(s.settled())
    }

    /// All counts at once.
    pub fn snapshot(&self) -> CountersSnapshot {
        CountersSnapshot {
            claimed: self.claimed(),
            claims: self.claims(),
            largest_claim: self.largest_claim(),
            completed: self.completed(),
            retried: self.retried(),
            dead: self.dead(),
            snoozed: self.snoozed(),
            panicked: self.panicked(),
            lease_lost: self.lease_lost(),
            released: self.released(),
            abandoned: self.abandoned(),
            pop_errors: self.pop_errors(),
            rescued: self.rescued(),
            restarted: self.restarted(),
        }
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        if n > 0 {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub(crate) fn add_claimed(&self, n: u64) {
        Self::add(&self.claimed, n);
    }
    /// One claim that gave out `n` jobs.
    pub(crate) fn add_claim(&self, n: u64) {
        if n > 0 {
            self.add_claimed(n);
            Self::add(&self.claims, 1);
            self.largest_claim.fetch_max(n, Ordering::Relaxed);
        }
    }
    pub(crate) fn add_completed(&self, n: u64) {
        Self::add(&self.completed, n);
    }
    pub(crate) fn add_retried(&self) {
        Self::add(&self.retried, 1);
    }
    pub(crate) fn add_dead(&self) {
        Self::add(&self.dead, 1);
    }
    pub(crate) fn add_snoozed(&self) {
        Self::add(&self.snoozed, 1);
    }
    pub(crate) fn add_panicked(&self) {
        Self::add(&self.panicked, 1);
    }
    pub(crate) fn add_lease_lost(&self, n: u64) {
        Self::add(&self.lease_lost, n);
    }
    pub(crate) fn add_released(&self) {
        Self::add(&self.released, 1);
    }
    pub(crate) fn add_abandoned(&self, n: u64) {
        Self::add(&self.abandoned, n);
    }
    pub(crate) fn add_pop_error(&self) {
        Self::add(&self.pop_errors, 1);
    }
    pub(crate) fn add_rescued(&self, n: u64) {
        Self::add(&self.rescued, n);
    }
    pub(crate) fn add_restarted(&self, n: u64) {
        Self::add(&self.restarted, n);
    }
}

/// The counts of [`Counters`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountersSnapshot {
    /// Jobs claimed.
    pub claimed: u64,
    /// Claims that gave out at least one job.
    pub claims: u64,
    /// The most jobs one claim gave out.
    pub largest_claim: u64,
    /// Jobs completed.
    pub completed: u64,
    /// Failed jobs sent back for another attempt.
    pub retried: u64,
    /// Failed jobs that went dead.
    pub dead: u64,
    /// Jobs snoozed by their handler.
    pub snoozed: u64,
    /// Handlers that panicked (also counted in `retried` or `dead`).
    pub panicked: u64,
    /// Jobs whose lease was lost or that were cancelled while held.
    pub lease_lost: u64,
    /// Jobs given back at shutdown, attempt not counted.
    pub released: u64,
    /// Jobs left running after a database error; the rescuer recovers them.
    pub abandoned: u64,
    /// Pops that failed.
    pub pop_errors: u64,
    /// Expired leases rescued.
    pub rescued: u64,
    /// Worker tasks started again after a panic.
    pub restarted: u64,
}

impl CountersSnapshot {
    /// Claimed jobs that reached an outcome: completed, retried, dead, snoozed, released,
    /// lease lost or abandoned.
    pub fn settled(&self) -> u64 {
        self.completed
            + self.retried
            + self.dead
            + self.snoozed
            + self.released
            + self.lease_lost
            + self.abandoned
    }
}

/// What a worker did, returned when it has shut down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// The counts over the worker's whole life.
    pub counters: CountersSnapshot,
    /// Handlers still running at the deadline, stopped and their jobs released.
    pub aborted: u64,
    /// How long the shutdown took.
    pub elapsed: Duration,
}

impl ShutdownReport {
    /// Whether every claimed job reached an outcome (always true unless a handler blocked its
    /// thread past the deadline).
    pub fn all_settled(&self) -> bool {
        self.counters.settled() == self.counters.claimed
    }
}
