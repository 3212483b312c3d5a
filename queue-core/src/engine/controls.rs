//! The engine's rules for queue controls (pause, resume, a global concurrency limit).
//!
//! Every claim statement of every dialect gives out nothing of a queue whose row in the
//! `queues` table says paused or limited: that check runs inside the claim, so a pause is seen
//! by the first claim that starts after it committed, in every process. A queue known to be
//! controlled is claimed on the controlled path instead: one transaction of the driver's that
//! locks the queue's row (so controlled claims of one queue take turns across processes), reads
//! pause and limit under that lock, counts the queue's live leases in a statement that starts
//! after the lock was granted (so it sees every claim that held the lock before), and claims at
//! most the room left. Nothing is counted outside the database: an expired lease stops counting
//! at its expiry, whether or not anyone rescued it yet.
//!
//! Which path a claim takes is a per-process guess kept in memory and corrected as claims go:
//! an ordinary claim that gives out nothing looks at the queue's row once (it may be the check
//! that refused), and the controlled path reads the row anyway. A wrong guess costs one round
//! trip, never a job given out against the controls.

use std::time::Duration;

use super::{
    sort_claimed, Driver, Engine, JobClaim, KeyPage, KeyRateRecord, RateRecord, RateState, Target,
    LOG_TARGET,
};
use crate::error::{Error, Result};
use crate::job::Leased;
use crate::queue::{HotKey, QueueControl, QueueStats, RateLimit, HOT_KEYS, MAX_CONCURRENCY_LIMIT};
use crate::validate;

/// The window a claim under `rate` falls in (by the database's clock in `state`) and how many
/// jobs already started in it.
fn rate_used(rate: RateLimit, state: RateState) -> (i64, u32) {
    rate_used_in(rate, state.window, state.count, state.now_us)
}

/// The window now (`now_us`, the database's clock) falls in under `rate`, and how many starts
/// of it a count of `count` in `window` leaves used.
fn rate_used_in(rate: RateLimit, window: Option<i64>, count: u32, now_us: i64) -> (i64, u32) {
    let now = now_us.div_euclid(rate.period_us());
    let used = if window == Some(now) { count } else { 0 };
    (now, used)
}

/// The window and count to record after a claim that counted `used` starts in `window` before
/// it and gave out `jobs`. Each job is counted in the window of its own start (its lease's
/// expiry less the lease, both by the database's clock), so a claim that began just before a
/// window ended and started its jobs after it counts them in the next one, where they fall.
fn rate_after_claim(
    rate: RateLimit,
    window: i64,
    used: u32,
    jobs: &[Leased],
    lease: Duration,
) -> (i64, u32) {
    let period = rate.period_us();
    let lease_us = i64::try_from(lease.as_micros()).unwrap_or(i64::MAX);
    let (mut window, mut count) = (window, used);
    for job in jobs {
        let start = job
            .lease
            .expires_at
            .timestamp_micros()
            .saturating_sub(lease_us);
        let w = start.div_euclid(period).max(window);
        if w > window {
            (window, count) = (w, 0);
        }
        count = count.saturating_add(1);
    }
    (window, count)
}

/// The most key turns one claim visits: past them it stops, and the next claim resumes after
/// the last it visited. Bounds the time a claim holds the queue's lock when many keys are at their limit.
const MAX_KEY_TURNS: usize = 1_000;

/// How long a process skips the turn of a keyed queue's jobs without a key after that turn
/// found none. Those jobs are not in the index of keyed jobs: finding them walks the queue's
/// pending jobs, which in a deep backlog of keyed jobs costs more than the claim itself.
pub(super) const UNKEYED_RECHECK: Duration = Duration::from_secs(1);

/// The turn of the jobs without a key in one keyed claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unkeyed {
    /// Looked for lately and none found: skipped.
    Skip,
    /// Not reached by this claim.
    NotReached,
    /// Looked for; whether any was found.
    Looked(bool),
}

/// How many next keys a keyed claim reads at once (one statement: a descent of the index of
/// keyed jobs per key).
const KEY_BATCH: usize = 32;

/// A turn of the key rotation: the jobs without a key, or one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Turn {
    Unkeyed,
    Key(String),
}

/// The keyed claim of a queue with a key limit or fair shares, under the queue's lock: visits
/// the turns after the one the previous claim served last (the unkeyed jobs, then each key with
/// a pending job in byte order, round and round), skips keys at their limit without reading
/// their jobs, and takes from each turn at most the room left and the key's room, until the
/// claim is full or every turn was visited once. Records the turn served last.
async fn claim_by_keys<D: Driver>(
    d: &D,
    conn: &mut D::Conn,
    c: &QueueControl,
    p: JobClaim<'_>,
    unkeyed: &mut Unkeyed,
    now_us: Option<i64>,
) -> std::result::Result<KeyedClaim, D::Error> {
    // A key rate limit counts by the database's clock, read once per claim (the caller's
    // reading of the queue's rate state, when it made one).
    let key_rate = match (c.key_rate_limit, now_us) {
        (Some(r), Some(now)) => Some((r, now)),
        (Some(r), None) => Some((r, d.queue_rate_state(conn, p.queue).await?.now_us)),
        (None, _) => None,
    };
    let mut throttled = false;
    let live: std::collections::HashMap<String, u64> = match c.key_limit {
        Some(_) => d
            .job_key_leases(Target::Tx(conn), p.queue)
            .await?
            .into_iter()
            .collect(),
        None => std::collections::HashMap::new(),
    };
    let start = c.key_cursor.clone().map_or(Turn::Unkeyed, Turn::Key);
    let mut at = start.clone();
    let mut served = None;
    let mut seen = std::collections::HashSet::new();
    let mut jobs = Vec::new();
    let mut ahead = std::collections::VecDeque::new();
    // Keys given room but not claimed yet (no key rate limit to read): claimed together, in
    // one statement where the dialect can, before any other turn is claimed and at the end.
    let mut group = KeyGroup::default();
    let mut turns = 0;
    loop {
        if jobs.len() + group.room >= p.limit {
            group.claim(d, conn, p, &mut jobs, &mut served).await?;
            if jobs.len() >= p.limit {
                break;
            }
        }
        if turns == MAX_KEY_TURNS {
            // Cut short (many keys at their limit): the next claim goes on from here, so keys
            // further on get their turns too.
            group.claim(d, conn, p, &mut jobs, &mut served).await?;
            served = Some(at.clone());
            break;
        }
        turns += 1;
        if ahead.is_empty() {
            // The next keys after the turn just visited, read together; past the last key
            // comes the turn of the jobs without a key, then the first key again.
            let after = match &at {
                Turn::Unkeyed => "",
                Turn::Key(k) => k.as_str(),
            };
            // As many as the room left (most keys take one job or more), at most KEY_BATCH.
            let n = (p.limit - jobs.len() - group.room).clamp(1, KEY_BATCH);
            let keys = d
                .job_key_next(
                    conn,
                    KeyPage {
                        queue: p.queue,
                        after,
                        limit: n,
                    },
                )
                .await?;
            let last = keys.len() < n;
            ahead.extend(keys.into_iter().map(Turn::Key));
            if last {
                ahead.push_back(Turn::Unkeyed);
            }
        }
        let Some(next) = ahead.pop_front() else {
            break;
        };
        at = next;
        if !seen.insert(at.clone()) {
            break; // every turn was visited
        }
        let room = p.limit - jobs.len() - group.room;
        match &at {
            Turn::Unkeyed if *unkeyed == Unkeyed::Skip => {}
            Turn::Unkeyed => {
                // Claimed in its place in the rotation: after the keys before it.
                group.claim(d, conn, p, &mut jobs, &mut served).await?;
                let room = p.limit - jobs.len();
                if room > 0 {
                    *unkeyed = Unkeyed::Looked(false);
                    let got = d
                        .job_claim_key(conn, JobClaim { limit: room, ..p }, None)
                        .await?;
                    if !got.is_empty() {
                        *unkeyed = Unkeyed::Looked(true);
                        served = Some(Turn::Unkeyed);
                        jobs.extend(got);
                    }
                }
            }
            Turn::Key(k) => {
                let used = live.get(k).copied().unwrap_or(0);
                let left = c
                    .key_limit
                    .map_or(u64::MAX, |n| u64::from(n).saturating_sub(used));
                let room = room.min(usize::try_from(left).unwrap_or(usize::MAX));
                match key_rate {
                    _ if room == 0 => {}
                    None => group.add(k, room),
                    Some((r, now_us)) => {
                        // The key's rate window: its starts so far, read only when it could
                        // take a job, and written in the same transaction as its claim.
                        group.claim(d, conn, p, &mut jobs, &mut served).await?;
                        let state = d.queue_key_rate_get(conn, p.queue, k).await?;
                        let (window, count) = state.unzip();
                        let (window, used) = rate_used_in(r, window, count.unwrap_or(0), now_us);
                        let left = r.limit.saturating_sub(used) as usize;
                        if left == 0 {
                            throttled = true;
                        }
                        let room = room.min(left).min(p.limit - jobs.len());
                        if room > 0 {
                            let got = d
                                .job_claim_key(conn, JobClaim { limit: room, ..p }, Some(k))
                                .await?;
                            if !got.is_empty() {
                                let (window, count) =
                                    rate_after_claim(r, window, used, &got, p.lease);
                                d.queue_key_rate_put(
                                    conn,
                                    KeyRateRecord {
                                        queue: p.queue,
                                        key: k,
                                        window,
                                        count,
                                    },
                                )
                                .await?;
                                served = Some(at.clone());
                                jobs.extend(got);
                            }
                        }
                    }
                }
            }
        }
        if at == start {
            break; // back where this claim began
        }
    }
    group.claim(d, conn, p, &mut jobs, &mut served).await?;
    if let Some(turn) = served.filter(|t| *t != start) {
        let cursor = match &turn {
            Turn::Unkeyed => None,
            Turn::Key(k) => Some(k.as_str()),
        };
        d.queue_key_cursor(conn, p.queue, cursor).await?;
    }
    // Nothing given out while some key had used its window: wake at the next one.
    let wake = key_rate.filter(|_| throttled && jobs.is_empty());
    Ok(KeyedClaim { jobs, wake })
}

/// What a keyed claim gave out, and when its waiters should look again when a key rate limit
/// held every job back (the limit and the database's clock now).
struct KeyedClaim {
    jobs: Vec<Leased>,
    wake: Option<(RateLimit, i64)>,
}

/// Keys of a keyed claim with the room each was given, in rotation order, to be claimed in
/// one `job_claim_keys`.
#[derive(Default)]
struct KeyGroup {
    keys: Vec<(String, usize)>,
    /// The room of all of them.
    room: usize,
}

impl KeyGroup {
    fn add(&mut self, key: &str, room: usize) {
        self.keys.push((key.to_owned(), room));
        self.room += room;
    }

    /// Claims the keys' jobs, adds them to `jobs`, and makes the last key that got any the
    /// turn served last. A key that had fewer due jobs than its room leaves the rest to the
    /// turns after it.
    async fn claim<D: Driver>(
        &mut self,
        d: &D,
        conn: &mut D::Conn,
        p: JobClaim<'_>,
        jobs: &mut Vec<Leased>,
        served: &mut Option<Turn>,
    ) -> std::result::Result<(), D::Error> {
        if self.keys.is_empty() {
            return Ok(());
        }
        let got = d.job_claim_keys(conn, p, &self.keys).await?;
        for ((key, _), got) in self.keys.drain(..).zip(got) {
            if !got.is_empty() {
                *served = Some(Turn::Key(key));
                jobs.extend(got);
            }
        }
        self.room = 0;
        Ok(())
    }
}

/// A concurrency or key limit: 1 to [`MAX_CONCURRENCY_LIMIT`], or none.
fn check_limit(field: &'static str, limit: Option<u32>) -> Result<()> {
    match limit {
        Some(0) => Err(Error::invalid(
            field,
            "must be at least 1 (pause the queue to stop it)",
        )),
        Some(n) if n > MAX_CONCURRENCY_LIMIT => Err(Error::invalid(
            field,
            format!("must be at most {MAX_CONCURRENCY_LIMIT} (got {n})"),
        )),
        _ => Ok(()),
    }
}

impl<D: Driver> Engine<D> {
    /// Whether claims of `queue` took the controlled path last time this process looked.
    pub(super) fn known_controlled(&self, queue: &str) -> bool {
        self.inner
            .controlled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(queue)
    }

    fn remember_controls(&self, queue: &str, controlled: bool) {
        let mut known = self
            .inner
            .controlled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if controlled {
            if !known.contains(queue) {
                known.insert(queue.to_owned());
            }
        } else {
            known.remove(queue);
        }
    }

    /// After an ordinary claim of `p.queue` gave out nothing (its statement may have refused
    /// a paused or limited queue): looks at the queue's row once and, when it is controlled,
    /// claims on the controlled path; otherwise the queue really had nothing due.
    pub(super) async fn claim_if_controlled(&self, p: JobClaim<'_>) -> Result<Vec<Leased>> {
        let control = self
            .driver()
            .queue_control_get(p.queue)
            .await
            .map_err(|e| self.error(e))?;
        let controlled = control.as_ref().is_some_and(QueueControl::restricts);
        self.remember_controls(p.queue, controlled);
        if controlled {
            self.claim_controlled(p).await
        } else {
            Ok(Vec::new())
        }
    }

    /// The controlled claim (see the module's docs), tried again after lock conflicts.
    pub(super) async fn claim_controlled(&self, p: JobClaim<'_>) -> Result<Vec<Leased>> {
        // The controlled claims read from the head of the queue (a position is the plain
        // claim's).
        let p = JobClaim { after: None, ..p };
        let (control, mut jobs) = self
            .retried("controlled claim", || self.claim_controlled_once(p))
            .await
            .map_err(|e| self.error(e))?;
        self.remember_controls(
            p.queue,
            control.as_ref().is_some_and(QueueControl::restricts),
        );
        sort_claimed(&mut jobs);
        Ok(jobs)
    }

    async fn claim_controlled_once(
        &self,
        p: JobClaim<'_>,
    ) -> std::result::Result<(Option<QueueControl>, Vec<Leased>), D::Error> {
        let d = self.driver();
        let mut tx = d.tx_begin().await?;
        let claimed = async {
            let conn = D::tx_conn(&mut tx);
            let control = d.queue_control_lock(conn, p.queue).await?;
            let Some(c) = control.as_ref().filter(|c| !c.paused) else {
                // Paused (no job), or no row at all (every job the claim asks for).
                let jobs = if control.is_some() {
                    Vec::new()
                } else {
                    d.job_claim_in(
                        conn,
                        JobClaim {
                            controls_checked: true,
                            ..p
                        },
                    )
                    .await?
                };
                return Ok((control, jobs));
            };
            let mut room = p.limit;
            if let Some(limit) = c.concurrency_limit {
                let live = d.job_live_leases(conn, p.queue).await?;
                let left = u64::from(limit).saturating_sub(live);
                room = room.min(usize::try_from(left).unwrap_or(usize::MAX));
            }
            let mut now_us = None;
            let rate = match (c.rate_limit, room) {
                (Some(r), 1..) => {
                    let state = d.queue_rate_state(conn, p.queue).await?;
                    now_us = Some(state.now_us);
                    let (window, used) = rate_used(r, state);
                    let left = r.limit.saturating_sub(used);
                    room = room.min(left as usize);
                    if left == 0 {
                        self.wake_at_next_window(p.queue, r, state.now_us);
                    }
                    Some((r, window, used))
                }
                _ => None,
            };
            let p = JobClaim {
                limit: room,
                controls_checked: true,
                ..p
            };
            let jobs = if room == 0 {
                Vec::new()
            } else if c.keyed() {
                let mut unkeyed = if self.unkeyed_idle(p.queue) {
                    Unkeyed::Skip
                } else {
                    Unkeyed::NotReached
                };
                let keyed = claim_by_keys(d, conn, c, p, &mut unkeyed, now_us).await?;
                if let Unkeyed::Looked(found) = unkeyed {
                    self.note_unkeyed(p.queue, found);
                }
                if let Some((r, now_us)) = keyed.wake {
                    self.wake_at_next_window(p.queue, r, now_us);
                }
                keyed.jobs
            } else {
                d.job_claim_in(conn, p).await?
            };
            if let (Some((r, window, used)), false) = (rate, jobs.is_empty()) {
                let (window, count) = rate_after_claim(r, window, used, &jobs, p.lease);
                d.queue_rate_record(
                    conn,
                    RateRecord {
                        queue: p.queue,
                        window,
                        count,
                    },
                )
                .await?;
            }
            Ok((control, jobs))
        }
        .await;
        match claimed {
            Ok(done) => {
                d.tx_commit(tx).await?;
                Ok(done)
            }
            Err(e) => {
                if let Err(rollback) = d.tx_rollback(tx).await {
                    tracing::debug!(target: LOG_TARGET, error = %rollback, "rollback after a failed controlled claim failed");
                }
                Err(e)
            }
        }
    }

    /// Whether this process looked for jobs without a key of keyed `queue` less than
    /// [`UNKEYED_RECHECK`] ago and found none.
    fn unkeyed_idle(&self, queue: &str) -> bool {
        self.inner
            .unkeyed_idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(queue)
            .is_some_and(|at| at.elapsed() < UNKEYED_RECHECK)
    }

    fn note_unkeyed(&self, queue: &str, found: bool) {
        let mut idle = self
            .inner
            .unkeyed_idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if found {
            idle.remove(queue);
        } else {
            idle.insert(queue.to_owned(), std::time::Instant::now());
        }
    }

    /// A claim of `queue` found its rate window full: wakes this process's workers of the
    /// queue when the next window opens (by the database's clock `now_us`), once however many
    /// claims found it full, instead of leaving them to poll.
    fn wake_at_next_window(&self, queue: &str, rate: RateLimit, now_us: i64) {
        let period = rate.period_us();
        let next = now_us
            .div_euclid(period)
            .saturating_add(1)
            .saturating_mul(period);
        let wait = Duration::from_micros(u64::try_from(next - now_us).unwrap_or(0));
        {
            let mut throttled = self
                .inner
                .throttled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !throttled.insert(queue.to_owned()) {
                return;
            }
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let hub = self.inner.hub.clone();
        let throttled = self.inner.throttled.clone();
        let queue = queue.to_owned();
        tracing::debug!(target: LOG_TARGET, queue, wait_ms = wait.as_millis() as u64, "rate limit reached; claims wait for the next window");
        runtime.spawn(async move {
            tokio::time::sleep(wait).await;
            throttled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&queue);
            hub.notify(&queue, usize::MAX);
        });
    }

    /// After jobs of `leases` finished: a queue with a concurrency limit has room again, so its
    /// workers waiting for work are woken (here at once, elsewhere through the driver's
    /// notifications where it has them) instead of sleeping until their next poll.
    pub(super) async fn places_freed(&self, leases: &[crate::job::Lease]) {
        let mut queues: Vec<&str> = leases.iter().map(|l| l.queue.as_str()).collect();
        queues.sort_unstable();
        queues.dedup();
        for queue in queues {
            if self.known_controlled(queue) {
                let n = leases.iter().filter(|l| l.queue == queue).count();
                self.wake(queue, n).await;
            }
        }
    }

    /// Pauses `queue`.
    ///
    /// # Errors
    /// As [`crate::Queue::pause`].
    pub async fn pause(&self, queue: &str) -> Result<()> {
        validate::queue_name(queue)?;
        self.retried("pause", || self.driver().queue_set_paused(queue, true))
            .await
            .map_err(|e| self.error(e))?;
        self.remember_controls(queue, true);
        Ok(())
    }

    /// Resumes `queue` and wakes its workers.
    ///
    /// # Errors
    /// As [`crate::Queue::resume`].
    pub async fn resume(&self, queue: &str) -> Result<()> {
        validate::queue_name(queue)?;
        self.retried("resume", || self.driver().queue_set_paused(queue, false))
            .await
            .map_err(|e| self.error(e))?;
        self.wake(queue, usize::MAX).await;
        Ok(())
    }

    /// Sets or removes the concurrency limit of `queue`.
    ///
    /// # Errors
    /// As [`crate::Queue::set_concurrency_limit`].
    pub async fn set_concurrency_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        validate::queue_name(queue)?;
        check_limit("concurrency_limit", limit)?;
        // A higher limit, or none, may leave room for jobs that were waiting.
        self.set_control("set_concurrency_limit", queue, limit.is_some(), || {
            self.driver().queue_set_limit(queue, limit)
        })
        .await
    }

    /// Stores one control of `queue` (`set`, retried on lock conflicts), remembers the queue
    /// as controlled when the control restricts it (`restricts`), and wakes its workers: a
    /// control removed or loosened may leave room for jobs that were waiting.
    async fn set_control<F, Fut>(
        &self,
        what: &'static str,
        queue: &str,
        restricts: bool,
        set: F,
    ) -> Result<()>
    where
        F: Fn() -> Fut + Send,
        Fut: std::future::Future<Output = std::result::Result<(), D::Error>> + Send,
    {
        self.retried(what, set).await.map_err(|e| self.error(e))?;
        if restricts {
            self.remember_controls(queue, true);
        }
        self.wake(queue, usize::MAX).await;
        Ok(())
    }

    /// Sets or removes the rate limit of `queue`.
    ///
    /// # Errors
    /// As [`crate::Queue::set_rate_limit`].
    pub async fn set_rate_limit(&self, queue: &str, rate: Option<RateLimit>) -> Result<()> {
        validate::queue_name(queue)?;
        if let Some(r) = &rate {
            r.validate()?;
        }
        let stored = rate.map(|r| (r.limit, r.period_us()));
        self.set_control("set_rate_limit", queue, rate.is_some(), || {
            self.driver().queue_set_rate(queue, stored)
        })
        .await
    }

    /// Sets or removes the key limit of `queue`.
    ///
    /// # Errors
    /// As [`crate::Queue::set_key_limit`].
    pub async fn set_key_limit(&self, queue: &str, limit: Option<u32>) -> Result<()> {
        validate::queue_name(queue)?;
        check_limit("key_limit", limit)?;
        self.set_control("set_key_limit", queue, limit.is_some(), || {
            self.driver().queue_set_key_limit(queue, limit)
        })
        .await
    }

    /// Sets or removes the key rate limit of `queue`.
    ///
    /// # Errors
    /// As [`crate::Queue::set_key_rate_limit`].
    pub async fn set_key_rate_limit(&self, queue: &str, rate: Option<RateLimit>) -> Result<()> {
        validate::queue_name(queue)?;
        if let Some(r) = &rate {
            r.validate().map_err(|e| match e {
                Error::InvalidInput { field, rule } => Error::InvalidInput {
                    field: format!("key_{field}"),
                    rule,
                },
                other => other,
            })?;
        }
        let stored = rate.map(|r| (r.limit, r.period_us()));
        self.set_control("set_key_rate_limit", queue, rate.is_some(), || {
            self.driver().queue_set_key_rate(queue, stored)
        })
        .await
    }

    /// Turns fair shares of `queue` on or off.
    ///
    /// # Errors
    /// As [`crate::Queue::set_fair_shares`].
    pub async fn set_fair_shares(&self, queue: &str, on: bool) -> Result<()> {
        validate::queue_name(queue)?;
        self.set_control("set_fair_shares", queue, on, || {
            self.driver().queue_set_fair(queue, on)
        })
        .await
    }

    /// The keys of keyed `queue` with the most live leases, each with its due jobs.
    async fn hot_keys(&self, queue: &str) -> std::result::Result<Vec<HotKey>, D::Error> {
        let d = self.driver();
        let leases = d.job_key_leases(Target::Pool, queue).await?;
        let mut hot = Vec::new();
        for (key, running) in leases.into_iter().take(HOT_KEYS) {
            let waiting = d.job_key_waiting(queue, &key).await?;
            hot.push(HotKey {
                key,
                running,
                waiting,
            });
        }
        Ok(hot)
    }

    /// Every queue that is paused or limited.
    ///
    /// # Errors
    /// As [`crate::Queue::controls`].
    pub async fn controls(&self) -> Result<Vec<QueueControl>> {
        let mut all = self
            .driver()
            .queue_control_list()
            .await
            .map_err(|e| self.error(e))?;
        all.retain(QueueControl::restricts);
        Ok(all)
    }

    /// `stats` with each queue's controls, and a line for every controlled queue without jobs
    /// (when all queues are asked for).
    pub(super) async fn with_controls(
        &self,
        queue: Option<&str>,
        mut stats: Vec<QueueStats>,
    ) -> Result<Vec<QueueStats>> {
        let controls = match queue {
            Some(q) => self
                .driver()
                .queue_control_get(q)
                .await
                .map_err(|e| self.error(e))?
                .into_iter()
                .collect(),
            None => self.controls().await?,
        };
        for c in controls.into_iter().filter(QueueControl::restricts) {
            let hot_keys = if c.keyed() {
                self.hot_keys(&c.queue).await.map_err(|e| self.error(e))?
            } else {
                Vec::new()
            };
            let s = match stats.iter_mut().position(|s| s.queue == c.queue) {
                Some(i) => &mut stats[i],
                None => {
                    stats.push(QueueStats {
                        queue: c.queue.clone(),
                        ..QueueStats::default()
                    });
                    stats.last_mut().expect("just pushed")
                }
            };
            s.paused = c.paused;
            s.concurrency_limit = c.concurrency_limit;
            s.rate_limit = c.rate_limit;
            s.key_limit = c.key_limit;
            s.fair_shares = c.fair_shares;
            s.key_rate_limit = c.key_rate_limit;
            s.hot_keys = hot_keys;
        }
        Ok(stats)
    }
}
