//! Cooperative cancellation: why a running job's handler is asked to stop, and the signal its
//! [`JobContext`](super::JobContext) carries.

use std::sync::atomic::{AtomicU8, Ordering};

use tokio::sync::Notify;

/// Why a handler is asked to stop ([`super::JobContext::cancelled`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelReason {
    /// An operator cancelled the job while it ran: its outcome will not be recorded.
    Cancelled,
    /// The worker no longer holds the job's lease (it expired and was rescued, or someone
    /// released it): another worker may run it, and this run's outcome is not recorded.
    LeaseLost,
    /// The run outlived its timeout; the job fails with a retryable error saying so.
    Timeout,
    /// The worker is shutting down: a handler that finishes before the shutdown deadline has
    /// its outcome recorded as usual (a snooze gives the job back for later); at the deadline
    /// it is stopped and its job released.
    Shutdown,
}

impl CancelReason {
    fn code(self) -> u8 {
        match self {
            CancelReason::Cancelled => 1,
            CancelReason::LeaseLost => 2,
            CancelReason::Timeout => 3,
            CancelReason::Shutdown => 4,
        }
    }

    fn of(code: u8) -> Option<Self> {
        Some(match code {
            1 => CancelReason::Cancelled,
            2 => CancelReason::LeaseLost,
            3 => CancelReason::Timeout,
            4 => CancelReason::Shutdown,
            _ => return None,
        })
    }

    /// Whether the run's outcome will still be recorded (only a shutdown leaves it so).
    pub fn outcome_counts(self) -> bool {
        self == CancelReason::Shutdown
    }
}

/// One run's cancellation: set by the worker, read and awaited by the handler. Lives in the
/// run's lease cell, so it costs no allocation of its own.
#[derive(Debug, Default)]
pub(crate) struct CancelSignal {
    reason: AtomicU8,
    changed: Notify,
}

impl CancelSignal {
    /// Asks the handler to stop for `reason`. A shutdown is replaced by a later reason that
    /// ends the run for good; otherwise the first reason stays.
    pub(crate) fn cancel(&self, reason: CancelReason) {
        let shutdown = CancelReason::Shutdown.code();
        let mut current = self.reason.load(Ordering::SeqCst);
        loop {
            if current != 0 && (current != shutdown || reason == CancelReason::Shutdown) {
                return;
            }
            match self.reason.compare_exchange(
                current,
                reason.code(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => break,
                Err(now) => current = now,
            }
        }
        self.changed.notify_waiters();
    }

    pub(crate) fn reason(&self) -> Option<CancelReason> {
        CancelReason::of(self.reason.load(Ordering::SeqCst))
    }

    /// Waits until a reason is set, and returns it.
    pub(crate) async fn wait(&self) -> CancelReason {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(reason) = self.reason() {
                return reason;
            }
            changed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_final_reason_stays_and_wakes_waiters() {
        let signal = std::sync::Arc::new(CancelSignal::default());
        assert_eq!(signal.reason(), None);
        let waiter = {
            let signal = signal.clone();
            tokio::spawn(async move { signal.wait().await })
        };
        tokio::task::yield_now().await;
        signal.cancel(CancelReason::Shutdown);
        assert_eq!(waiter.await.ok(), Some(CancelReason::Shutdown));
        // A shutdown gives way to a reason that ends the run; that one stays.
        signal.cancel(CancelReason::LeaseLost);
        signal.cancel(CancelReason::Cancelled);
        signal.cancel(CancelReason::Shutdown);
        assert_eq!(signal.reason(), Some(CancelReason::LeaseLost));
        assert_eq!(signal.wait().await, CancelReason::LeaseLost);
    }
}
