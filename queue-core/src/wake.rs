//! In-process wake-ups: a push through a queue value wakes that value's idle workers at once,
//! instead of after their next poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

/// The wake-up an engine sends after it cancelled a job (not a queue name: `!` is refused in
/// those). A worker whose backend delivers other processes' notifications waits on it, and
/// checks at once whether its running jobs are still its own (a heartbeat each).
pub const CANCEL_WAKE: &str = "!cancelled";

/// One [`Notify`] per queue name. Backends call [`WakeHub::notify`] after a push commits (and,
/// where the database has notifications, when one arrives); [`WakeHub::wait`] backs
/// [`crate::Queue::wait_for_work`].
#[derive(Debug, Default)]
pub struct WakeHub {
    queues: Mutex<HashMap<String, Arc<Notify>>>,
}

impl WakeHub {
    /// An empty hub.
    pub fn new() -> Self {
        Self::default()
    }

    fn entry(&self, queue: &str) -> Arc<Notify> {
        let mut map = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get(queue) {
            return n.clone();
        }
        let n = Arc::new(Notify::new());
        map.insert(queue.to_owned(), n.clone());
        n
    }

    /// Signals that `jobs` new jobs are available on `queue`. One job wakes one waiter (or
    /// leaves a permit for the next one, so a push racing a worker's empty pop is not missed);
    /// several wake every waiter.
    pub fn notify(&self, queue: &str, jobs: usize) {
        let n = self.entry(queue);
        // A cancel concerns every worker waiting on this hub, not one of them.
        if jobs > 1 || queue == CANCEL_WAKE {
            n.notify_waiters();
        }
        n.notify_one();
    }

    /// Waits for a signal on `queue` or for `timeout`, whichever comes first.
    pub async fn wait(&self, queue: &str, timeout: Duration) {
        let n = self.entry(queue);
        let _ = tokio::time::timeout(timeout, n.notified()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn a_push_before_the_wait_is_not_missed() {
        let hub = WakeHub::new();
        hub.notify("q", 1);
        let t = Instant::now();
        hub.wait("q", Duration::from_secs(5)).await;
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[tokio::test]
    async fn queues_are_separate() {
        let hub = WakeHub::new();
        hub.notify("other", 1);
        let t = Instant::now();
        hub.wait("q", Duration::from_millis(50)).await;
        assert!(t.elapsed() >= Duration::from_millis(50));
    }
}
