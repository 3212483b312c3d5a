//! The in-memory store's [`Controls`](queue_core::engine::Controls) implementation: pauses, limits,
//! rate limits, concurrency keys and fair shares.

use std::collections::BTreeMap;
use std::ops::Bound;

use async_trait::async_trait;
use queue_core::engine::{Controls, KeyPage, KeyRateRecord, RateRecord, RateState, Target};
use queue_core::QueueControl;

use crate::faults::Statement;
use crate::store::MemoryTx;
use crate::tables::RateCount;

use super::{set_control, update_control, MemoryDriver, Result};

#[async_trait]
impl Controls for MemoryDriver {
    /// The controls of `queue`, `None` when it has no row.
    async fn queue_control_get(&self, queue: &str) -> Result<Option<QueueControl>> {
        let _call = self.enter(Statement::QueueControlGet).await?;
        self.read(|t, _| Ok(t.schema()?.queues.get(queue).map(|row| row.control(queue))))
            .await
    }

    /// `queue_control_get` inside the controlled claim's transaction, whose hold of the
    /// store's lock is the queue's lock.
    async fn queue_control_lock(
        &self,
        conn: &mut MemoryTx,
        queue: &str,
    ) -> Result<Option<QueueControl>> {
        let _call = self.enter(Statement::QueueControlLock).await?;
        self.read_on(Target::Tx(conn), |t, _| {
            Ok(t.schema()?.queues.get(queue).map(|row| row.control(queue)))
        })
        .await
    }

    /// Every queue's controls, by name.
    async fn queue_control_list(&self) -> Result<Vec<QueueControl>> {
        let _call = self.enter(Statement::QueueControlList).await?;
        self.read(|t, _| {
            Ok(t.schema()?
                .queues
                .iter()
                .map(|(name, row)| row.control(name))
                .collect())
        })
        .await
    }

    /// Pauses or resumes `queue` (its row made when missing).
    async fn queue_set_paused(&self, queue: &str, paused: bool) -> Result<()> {
        let _call = self.enter(Statement::QueueSetPaused).await?;
        self.pool(|w, now| set_control(w, queue, now, |row| row.paused = paused))
            .await
    }

    /// Sets or removes the concurrency limit of `queue` (its row made when missing).
    async fn queue_set_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        let _call = self.enter(Statement::QueueSetLimit).await?;
        self.pool(|w, now| set_control(w, queue, now, |row| row.concurrency_limit = limit))
            .await
    }

    /// Sets or removes the rate limit of `queue` (its row made when missing); its count starts
    /// afresh (no window).
    async fn queue_set_rate(&self, queue: &str, rate: Option<(u32, i64)>) -> Result<()> {
        let _call = self.enter(Statement::QueueSetRate).await?;
        self.pool(|w, now| {
            set_control(w, queue, now, |row| {
                row.rate = rate;
                row.rate_window = None;
                row.rate_count = 0;
            })
        })
        .await
    }

    /// The rate window and count of `queue`, with the clock now in microseconds; no window and
    /// no count when it has no row.
    async fn queue_rate_state(&self, conn: &mut MemoryTx, queue: &str) -> Result<RateState> {
        let _call = self.enter(Statement::QueueRateState).await?;
        self.read_on(Target::Tx(conn), |t, now| {
            let row = t.schema()?.queues.get(queue);
            Ok(RateState {
                window: row.and_then(|r| r.rate_window),
                count: row.map_or(0, |r| r.rate_count),
                now_us: now.timestamp_micros(),
            })
        })
        .await
    }

    /// Records that `count` jobs of `queue` started in `window`.
    async fn queue_rate_record(&self, conn: &mut MemoryTx, c: RateRecord<'_>) -> Result<()> {
        let RateRecord {
            queue,
            window,
            count,
        } = c;
        let _call = self.enter(Statement::QueueRateRecord).await?;
        self.on(Target::Tx(conn), |w, _| {
            update_control(w, queue, |row| {
                row.rate_window = Some(window);
                row.rate_count = count;
            })
        })
        .await
    }

    /// Sets or removes the key limit of `queue` (its row made when missing).
    async fn queue_set_key_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        let _call = self.enter(Statement::QueueSetKeyLimit).await?;
        self.pool(|w, now| set_control(w, queue, now, |row| row.key_limit = limit))
            .await
    }

    /// Sets or removes the key rate limit of `queue` (its row made when missing), and forgets
    /// the counts of its keys.
    async fn queue_set_key_rate(&self, queue: &str, rate: Option<(u32, i64)>) -> Result<()> {
        let _call = self.enter(Statement::QueueSetKeyRate).await?;
        self.pool(|w, now| {
            set_control(w, queue, now, |row| row.key_rate = rate)?;
            let keys: Vec<String> = w
                .schema()?
                .key_rates
                .range((queue.to_owned(), String::new())..)
                .take_while(|((q, _), _)| q == queue)
                .map(|((_, key), _)| key.clone())
                .collect();
            for key in keys {
                w.put_key_rate(queue, &key, None)?;
            }
            Ok(())
        })
        .await
    }

    /// The window of `key`'s count of starts in `queue`, and that count.
    async fn queue_key_rate_get(
        &self,
        conn: &mut MemoryTx,
        queue: &str,
        key: &str,
    ) -> Result<Option<(i64, u32)>> {
        let _call = self.enter(Statement::QueueKeyRateGet).await?;
        self.read_on(Target::Tx(conn), |t, _| {
            Ok(t.schema()?
                .key_rates
                .get(&(queue.to_owned(), key.to_owned()))
                .map(|c| (c.window, c.count)))
        })
        .await
    }

    /// Records that `count` jobs of `key` in `queue` started in `window`.
    async fn queue_key_rate_put(&self, conn: &mut MemoryTx, c: KeyRateRecord<'_>) -> Result<()> {
        let KeyRateRecord {
            queue,
            key,
            window,
            count,
        } = c;
        let _call = self.enter(Statement::QueueKeyRatePut).await?;
        self.on(Target::Tx(conn), |w, _| {
            w.put_key_rate(queue, key, Some(RateCount { window, count }))
        })
        .await
    }

    /// Turns fair shares of `queue` on or off (its row made when missing).
    async fn queue_set_fair(&self, queue: &str, on: bool) -> Result<()> {
        let _call = self.enter(Statement::QueueSetFair).await?;
        self.pool(|w, now| set_control(w, queue, now, |row| row.fair_shares = on))
            .await
    }

    /// Records the key the keyed claim of `queue` served last (`None`: the jobs without a key).
    async fn queue_key_cursor(
        &self,
        conn: &mut MemoryTx,
        queue: &str,
        cursor: Option<&str>,
    ) -> Result<()> {
        let _call = self.enter(Statement::QueueKeyCursor).await?;
        self.on(Target::Tx(conn), |w, _| {
            update_control(w, queue, |row| row.key_cursor = cursor.map(str::to_owned))
        })
        .await
    }

    /// For each concurrency key of `queue`, how many of its jobs run under a lease that has not
    /// expired at `now`: the most first, then by key. Jobs without a key are left out.
    async fn job_key_leases(
        &self,
        target: Target<'_, MemoryTx>,
        queue: &str,
    ) -> Result<Vec<(String, u64)>> {
        let _call = self.enter(Statement::JobKeyLeases).await?;
        self.read_on(target, |t, now| {
            let jobs = &t.schema()?.jobs;
            let mut per_key: BTreeMap<&str, u64> = BTreeMap::new();
            if let Some(q) = jobs.queue(queue) {
                for id in q.live_leases(now) {
                    if let Some(key) = jobs.get(id).and_then(|r| r.concurrency_key.as_deref()) {
                        *per_key.entry(key).or_default() += 1;
                    }
                }
            }
            let mut leases: Vec<(String, u64)> = per_key
                .into_iter()
                .map(|(key, n)| (key.to_owned(), n))
                .collect();
            leases.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            Ok(leases)
        })
        .await
    }

    /// The `n` smallest concurrency keys above `after` (byte order) that pending jobs of
    /// `queue` have, due or not: the next keys of the queue's index of keyed pending jobs.
    async fn job_key_next(&self, conn: &mut MemoryTx, p: KeyPage<'_>) -> Result<Vec<String>> {
        let KeyPage {
            queue,
            after,
            limit: n,
        } = p;
        let _call = self.enter(Statement::JobKeyNext).await?;
        self.read_on(Target::Tx(conn), |t, _| {
            let Some(q) = t.schema()?.jobs.queue(queue) else {
                return Ok(Vec::new());
            };
            Ok(q.keyed
                .range::<str, _>((Bound::Excluded(after), Bound::Unbounded))
                .take(n)
                .map(|(key, _)| key.clone())
                .collect())
        })
        .await
    }

    /// How many pending jobs of `queue` with the concurrency key `key` are due at `now`.
    async fn job_key_waiting(&self, queue: &str, key: &str) -> Result<u64> {
        let _call = self.enter(Statement::JobKeyWaiting).await?;
        self.read(|t, now| {
            Ok(t.schema()?
                .jobs
                .queue(queue)
                .and_then(|q| q.keyed.get(key))
                .map_or(0, |order| order.due(now).count() as u64))
        })
        .await
    }

    /// How many jobs of `queue` run under a lease that has not expired at `now`.
    async fn job_live_leases(&self, conn: &mut MemoryTx, queue: &str) -> Result<u64> {
        let _call = self.enter(Statement::JobLiveLeases).await?;
        self.read_on(Target::Tx(conn), |t, now| {
            Ok(t.schema()?
                .jobs
                .queue(queue)
                .map_or(0, |q| q.live_leases(now).count() as u64))
        })
        .await
    }
}
