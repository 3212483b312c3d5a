//! [`Clock`]: what a [`super::Scheduler`] reads the time from and waits on. In production the
//! database's clock ([`DatabaseClock`]); in tests a [`ManualClock`] that only moves when told.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::error::Result;
use crate::queue::Queue;

/// The time a scheduler decides slots by.
#[async_trait]
pub trait Clock: Send + Sync + 'static {
    /// The time now.
    ///
    /// # Errors
    /// When the clock cannot be read (the database is unavailable).
    async fn now(&self) -> Result<DateTime<Utc>>;

    /// Returns once the clock has reached `until`, given that it shows about `now` (or
    /// earlier, spuriously: the scheduler reads the clock again).
    async fn sleep_until(&self, now: DateTime<Utc>, until: DateTime<Utc>);
}

/// The database's clock ([`Queue::now`]; on SQLite, the host's), which runs at the rate of
/// real time: the one production schedulers use, so every process decides slots by the same
/// clock.
#[derive(Clone)]
pub struct DatabaseClock {
    queue: Arc<dyn Queue>,
}

impl std::fmt::Debug for DatabaseClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseClock").finish_non_exhaustive()
    }
}

impl DatabaseClock {
    /// The clock of `queue`'s database.
    pub fn new(queue: Arc<dyn Queue>) -> Self {
        DatabaseClock { queue }
    }
}

#[async_trait]
impl Clock for DatabaseClock {
    async fn now(&self) -> Result<DateTime<Utc>> {
        self.queue.now().await
    }

    async fn sleep_until(&self, now: DateTime<Utc>, until: DateTime<Utc>) {
        let wait = (until - now).to_std().unwrap_or(Duration::ZERO);
        tokio::time::sleep(wait).await;
    }
}

/// A clock that stands still until [`ManualClock::set`] or [`ManualClock::advance`] moves it:
/// for tests of schedules over many slots without waiting for them.
#[derive(Debug)]
pub struct ManualClock {
    now: watch::Sender<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: DateTime<Utc>) -> Arc<Self> {
        Arc::new(ManualClock {
            now: watch::Sender::new(start),
        })
    }

    /// The time it shows.
    pub fn get(&self) -> DateTime<Utc> {
        *self.now.borrow()
    }

    /// Moves it to `t` (also backwards), waking every scheduler waiting on it.
    pub fn set(&self, t: DateTime<Utc>) {
        self.now.send_replace(t);
    }

    /// Moves it forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = chrono::Duration::from_std(by).unwrap_or(chrono::Duration::MAX);
        self.now
            .send_modify(|t| *t = t.checked_add_signed(by).unwrap_or(*t));
    }
}

#[async_trait]
impl Clock for ManualClock {
    async fn now(&self) -> Result<DateTime<Utc>> {
        Ok(self.get())
    }

    async fn sleep_until(&self, _now: DateTime<Utc>, until: DateTime<Utc>) {
        let mut rx = self.now.subscribe();
        // The sender lives as long as `self`, so this only ends when the clock gets there.
        let _ = rx.wait_for(|t| *t >= until).await;
    }
}
