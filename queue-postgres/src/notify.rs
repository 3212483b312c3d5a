//! Sending wake-ups: NOTIFY on the schema's channel, coalesced per queue.
//!
//! Every notifying commit takes PostgreSQL's database-wide notification lock and holds it
//! through its WAL flush, so notifying commits run one at a time; a NOTIFY per push halves the
//! rate of concurrent single pushes. Yet a worker needs only one wake-up to start popping, and
//! then pops until its queue is empty. So a single push carries its own NOTIFY only when the
//! queue's last one from this queue value is at least the coalescing window old (the leading
//! edge: an idle worker is woken at once). A push inside the window skips it, and once that push
//! has committed one trailing NOTIFY is sent at the end of the window, so no push waits longer
//! than the window for its wake-up. Under load that is at most two notifications per window per
//! queue instead of one per push.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::PgPool;

const LOG: &str = "queue::postgres";

#[derive(Debug, Default)]
struct Slot {
    /// When the last notification for the queue was sent (or decided on).
    last: Option<Instant>,
    /// Whether a trailing notification is scheduled and not yet under way.
    trailing: bool,
}

/// Decides which pushes carry a NOTIFY and sends the trailing ones.
#[derive(Debug)]
pub(crate) struct Notifier {
    window: Duration,
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

impl Notifier {
    pub(crate) fn new(window: Duration) -> Self {
        Notifier {
            window,
            slots: Arc::default(),
        }
    }

    /// Whether a single push to `queue` starting now should carry its own NOTIFY. When not, the
    /// caller must call [`Notifier::trail`] once the push committed.
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

    /// Makes sure a NOTIFY for `queue` is sent after this moment (the end of the window at the
    /// latest), for a push that skipped its own and has committed.
    pub(crate) fn trail(&self, queue: &str, pool: &PgPool, sql: &str, channel: &str) {
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
        let (pool, sql, channel, queue) = (
            pool.clone(),
            sql.to_owned(),
            channel.to_owned(),
            queue.to_owned(),
        );
        tokio::spawn(async move {
            tokio::time::sleep_until(due.into()).await;
            {
                let mut slots = slots.lock().unwrap_or_else(|e| e.into_inner());
                let slot = slots.entry(queue.clone()).or_default();
                // From here on, a push that commits schedules a new trailing notification.
                slot.trailing = false;
                slot.last = Some(Instant::now());
            }
            if let Err(error) = sqlx::query(&sql)
                .bind(&channel)
                .bind(&queue)
                .execute(&pool)
                .await
            {
                tracing::warn!(target: LOG, queue, %error, "could not send a wake-up; workers will find the job at their next poll");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_once_per_window() {
        let n = Notifier::new(Duration::from_millis(200));
        assert!(n.lead("a"));
        assert!(!n.lead("a"));
        assert!(n.lead("b"), "queues are separate");
        std::thread::sleep(Duration::from_millis(210));
        assert!(n.lead("a"));
        let every = Notifier::new(Duration::ZERO);
        assert!(every.lead("a") && every.lead("a"));
    }
}
