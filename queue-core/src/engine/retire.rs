//! [`Retirement`]: closing every pooled connection made before a moment, for drivers whose
//! server can stop taking writes while keeping its sockets.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When a driver last found its server read-only or departing. A primary demoted in place (or
/// a server switched to read-only) keeps its connections open and answers every write on every
/// one of them with an error; reusing them would keep failing until the process restarts. A
/// driver calls [`Retirement::retire`] when it sees such an error, and its pool's checkout hook
/// closes every connection whose age says it was made before ([`Retirement::is_retired`]), so
/// the next call opens a fresh connection, wherever the server's name now leads.
#[derive(Debug)]
pub struct Retirement {
    base: Instant,
    /// Microseconds after `base` of the last retirement, plus one; 0 when none.
    at: AtomicU64,
}

impl Retirement {
    /// No connection retired yet.
    pub fn new() -> Arc<Retirement> {
        Arc::new(Retirement {
            base: Instant::now(),
            at: AtomicU64::new(0),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_micros()).unwrap_or(u64::MAX) + 1
    }

    /// Every connection made until now is to be closed at its next checkout.
    pub fn retire(&self) {
        self.at.fetch_max(self.now(), Ordering::Relaxed);
    }

    /// Whether a connection of this age was made before the last retirement.
    pub fn is_retired(&self, age: Duration) -> bool {
        let at = self.at.load(Ordering::Relaxed);
        if at == 0 {
            return false;
        }
        let born = self
            .now()
            .saturating_sub(u64::try_from(age.as_micros()).unwrap_or(u64::MAX));
        born <= at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retirement_closes_only_older_connections() {
        let r = Retirement::new();
        assert!(!r.is_retired(Duration::from_secs(3600)), "none retired yet");
        std::thread::sleep(Duration::from_millis(5));
        r.retire();
        assert!(r.is_retired(Duration::from_millis(2)), "made before");
        std::thread::sleep(Duration::from_millis(5));
        assert!(!r.is_retired(Duration::from_millis(1)), "made after");
        assert!(r.is_retired(Duration::from_millis(20)), "still made before");
    }
}
