//! [`Controls`]: a queue's row in the `queues` table (pause, limits, rates, fair shares) and the
//! concurrency keys' state, read and locked by the controlled claim.

use std::time::Duration;

use async_trait::async_trait;

use crate::queue::QueueControl;

use super::{Lifecycle, Target};

/// The rate limit stored in a queue's row (`rate_limit`, `rate_period_us`), `None` unless both
/// are set and in range.
pub fn rate_limit_of(limit: Option<i64>, period_us: Option<i64>) -> Option<crate::RateLimit> {
    let limit = u32::try_from(limit?).ok()?;
    let period = Duration::from_micros(u64::try_from(period_us?).ok()?);
    Some(crate::RateLimit { limit, period })
}

/// A queue's rate count as stored in its row, read with the database's clock
/// ([`Controls::queue_rate_state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateState {
    /// The window (microseconds since the Unix epoch divided by the period) that `count`
    /// belongs to; `None` before the first claim under the limit.
    pub window: Option<i64>,
    /// Jobs started in `window`.
    pub count: u32,
    /// The database's clock, in microseconds since the Unix epoch.
    pub now_us: i64,
}

/// `queue_rate_record`: a queue's rate window and its count of starts in it.
#[derive(Clone, Copy, Debug)]
pub struct RateRecord<'a> {
    /// The queue.
    pub queue: &'a str,
    /// The window, as its start in microseconds since the epoch by the database's clock.
    pub window: i64,
    /// Starts counted in the window.
    pub count: u32,
}

/// `queue_key_rate_put`: one concurrency key's rate window and its count of starts in it.
#[derive(Clone, Copy, Debug)]
pub struct KeyRateRecord<'a> {
    /// The queue.
    pub queue: &'a str,
    /// The concurrency key.
    pub key: &'a str,
    /// The window, as its start in microseconds since the epoch by the database's clock.
    pub window: i64,
    /// Starts counted in the window.
    pub count: u32,
}

/// `job_key_next`: a page of a queue's concurrency keys, in byte order.
#[derive(Clone, Copy, Debug)]
pub struct KeyPage<'a> {
    /// The queue.
    pub queue: &'a str,
    /// The page starts after this key (the empty key: from the first).
    pub after: &'a str,
    /// Most keys.
    pub limit: usize,
}

/// Queue controls: one row per queue in the `queues` table (pause, limit, rates, fair share),
/// read by every claim statement (which gives out nothing of a paused or limited queue) and
/// locked by the engine's controlled claim, which counts live leases and claims inside one
/// transaction; and the state of a queue's concurrency keys.
#[async_trait]
pub trait Controls: Lifecycle {
    /// `queue_control_get`: the controls of `queue`, `None` when it has no row.
    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>, Self::Error>;

    /// `queue_control_lock`: the controls of `queue`, read with a lock that every other
    /// `queue_control_lock` of the same queue waits for until this transaction ends (SQLite:
    /// the transaction's write lock is that lock).
    async fn queue_control_lock(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
    ) -> Result<Option<QueueControl>, Self::Error>;

    /// `queue_control_list`: every row of the `queues` table, by name.
    async fn queue_control_list(&self) -> Result<Vec<QueueControl>, Self::Error>;

    /// `queue_set_paused`: creates the row of `queue` when missing and sets `paused`.
    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<(), Self::Error>;

    /// `queue_set_limit`: creates the row of `queue` when missing and sets its limit.
    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<(), Self::Error>;

    /// `queue_set_rate`: creates the row of `queue` when missing, sets its rate limit (`Some`:
    /// starts per window and the window in microseconds) or removes it, and starts its count
    /// afresh (no window recorded).
    async fn queue_set_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), Self::Error>;

    /// `queue_rate_state`: inside the controlled claim's transaction, after
    /// `queue_control_lock`: the window the queue's rate count belongs to (`None`: none yet)
    /// and that count, with the database's clock now.
    async fn queue_rate_state(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
    ) -> Result<RateState, Self::Error>;

    /// `queue_rate_record`: sets the queue's rate window and its count of starts.
    async fn queue_rate_record(
        &self,
        conn: &mut Self::Conn,
        c: RateRecord<'_>,
    ) -> Result<(), Self::Error>;

    /// `queue_set_key_limit`: creates the row of `queue` when missing and sets its key limit.
    async fn queue_set_key_limit(&self, queue: &str, limit: Option<u32>)
        -> Result<(), Self::Error>;

    /// `queue_set_key_rate`: creates the row of `queue` when missing, sets its key rate limit
    /// (`Some`: starts per window and the window in microseconds) or removes it, and forgets
    /// the counts of its keys.
    async fn queue_set_key_rate(
        &self,
        queue: &str,
        rate: Option<(u32, i64)>,
    ) -> Result<(), Self::Error>;

    /// `queue_key_rate_get`: inside the keyed claim's transaction: the window the count of
    /// `key`'s starts belongs to and that count (`None`: none recorded).
    async fn queue_key_rate_get(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>, Self::Error>;

    /// `queue_key_rate_put`: records `c.count` starts of `c.key` in `c.window` (creating its
    /// row).
    async fn queue_key_rate_put(
        &self,
        conn: &mut Self::Conn,
        c: KeyRateRecord<'_>,
    ) -> Result<(), Self::Error>;

    /// `queue_set_fair`: creates the row of `queue` when missing and turns fair shares on or off.
    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<(), Self::Error>;

    /// `queue_key_cursor`: inside the controlled claim's transaction: records the key served
    /// last (`None`: the jobs without a key).
    async fn queue_key_cursor(
        &self,
        conn: &mut Self::Conn,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<(), Self::Error>;

    /// `job_key_leases`: for each concurrency key of `queue` with jobs running under an
    /// unexpired lease (by the database's clock, as of this statement), how many; the keys with
    /// the most first. Jobs without a key are left out.
    /// Inside the keyed claim's transaction (`Target::Tx`), or on the pool for `stats`
    /// (SQLite: its reader, so stats never wait for the write lock).
    async fn job_key_leases(
        &self,
        target: Target<'_, Self::Conn>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>, Self::Error>;

    /// `job_key_next`: the `p.limit` smallest concurrency keys above `p.after` (byte order)
    /// that pending jobs of `p.queue` have, due or not, in order; fewer past the last.
    async fn job_key_next(
        &self,
        conn: &mut Self::Conn,
        p: KeyPage<'_>,
    ) -> Result<Vec<String>, Self::Error>;

    /// `job_key_waiting`: how many pending jobs of `queue` with concurrency key `key` are due.
    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64, Self::Error>;

    /// `job_live_leases`: how many jobs of `queue` are running with an unexpired lease, by the
    /// database's clock, as of this statement (a new snapshot after `queue_control_lock`).
    async fn job_live_leases(&self, conn: &mut Self::Conn, queue: &str)
        -> Result<u64, Self::Error>;
}
