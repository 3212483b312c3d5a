//! Coalescing the cross-process wake-ups of single pushes.
//!
//! Where the database delivers notifications (PostgreSQL NOTIFY), every notifying commit takes a
//! database-wide lock and holds it through its WAL flush, so notifying commits run one at a
//! time and a notification per push halves the rate of concurrent single pushes. Yet a worker
//! needs only one wake-up to start claiming, and then claims until its queue is empty. So a
//! single push carries its own notification only when the queue's last one from this queue
//! value is at least the coalescing window old (the leading edge: an idle worker is woken at
//! once). A push inside the window skips it, and once that push has committed one trailing
//! notification is sent at the end of the window, so no push waits longer than the window for
//! its wake-up. Under load that is at most two notifications per window per queue instead of
//! one per push.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
struct Slot {
    /// When the last notification for the queue was sent (or decided on).
    last: Option<Instant>,
    /// Whether a trailing notification is scheduled and not yet under way.
    trailing: bool,
}

/// Decides which single pushes carry a notification and schedules the trailing ones.
#[derive(Debug)]
pub(crate) struct Coalescer {
    window: Duration,
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

impl Coalescer {
    pub(crate) fn new(window: Duration) -> Self {
        Coalescer {
            window,
            slots: Arc::default(),
        }
    }

    /// Whether a single push to `queue` starting now should carry its own notification. When
    /// not, the caller must call [`Coalescer::trail`] once the push committed.
    pub(crate) fn lead(&self, queue: &str) -> bool {
        if self.window.is_zero() {
            return true;
        }
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let slot = match slots.get_mut(queue) {
            Some(slot) => slot,
            None => slots.entry(queue.to_owned()).or_default(),
        };
        let quiet = slot
            .last
            .is_none_or(|last| now.duration_since(last) >= self.window);
        if quiet && !slot.trailing {
            slot.last = Some(now);
            true
        } else {
            false
        }
    }

    /// Makes sure a notification for `queue` is sent (by `send`) after this moment, at the end
    /// of the window at the latest, for a push that skipped its own and has committed.
    pub(crate) fn trail<F, Fut>(&self, queue: &str, send: F)
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let due = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            let slot = slots.entry(queue.to_owned()).or_default();
            if slot.trailing {
                // The scheduled one has not started yet, so it is sent after this commit.
                return;
            }
            slot.trailing = true;
            slot.last
                .map_or_else(Instant::now, |last| last + self.window)
        };
        let slots = self.slots.clone();
        let queue = queue.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep_until(due.into()).await;
            {
                let mut slots = slots.lock().unwrap_or_else(|e| e.into_inner());
                let slot = slots.entry(queue).or_default();
                // From here on, a push that commits schedules a new trailing notification.
                slot.trailing = false;
                slot.last = Some(Instant::now());
            }
            send().await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn leads_once_per_window() {
        let n = Coalescer::new(Duration::from_millis(200));
        assert!(n.lead("a"));
        assert!(!n.lead("a"));
        assert!(n.lead("b"), "queues are separate");
        std::thread::sleep(Duration::from_millis(210));
        assert!(n.lead("a"));
        let every = Coalescer::new(Duration::ZERO);
        assert!(every.lead("a") && every.lead("a"));
    }

    #[tokio::test]
    async fn a_skipped_push_gets_one_trailing_notification() {
        let n = Coalescer::new(Duration::from_millis(20));
        let sent = Arc::new(AtomicUsize::new(0));
        assert!(n.lead("q"));
        for _ in 0..5 {
            assert!(!n.lead("q"));
            let sent = sent.clone();
            n.trail("q", move || async move {
                sent.fetch_add(1, Ordering::SeqCst);
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            sent.load(Ordering::SeqCst),
            1,
            "five skipped pushes, one trailing"
        );
    }
}
