//! [`Store`]: the tables behind one lock, the clock they are written by, and the queue values
//! waiting for work on them; named stores shared across the process; [`MemoryTx`], a
//! transaction that holds the store's lock until it ends, and [`MemorySavepoint`], a savepoint
//! in one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use chrono::{DateTime, SubsecRound, Utc};
use queue_core::{Error, ManualClock, WakeHub};
use tokio::sync::OwnedMutexGuard;

use crate::error::MemoryError;
use crate::tables::{Tables, Undo, Writer};

/// The clock of a store: the system's, a [`ManualClock`] that moves only when a test moves
/// it, or Tokio's. Read at microsecond precision, the precision every dialect stores.
#[derive(Clone, Debug)]
pub(crate) enum Clock {
    System,
    Manual(Arc<ManualClock>),
    /// `start` (the system's time when the store opened) plus the Tokio time elapsed since
    /// `base`: it moves as Tokio's clock does, so paused time (`tokio::time::advance`, and the
    /// auto-advance of a `start_paused` test) moves it too.
    Tokio {
        start: DateTime<Utc>,
        base: tokio::time::Instant,
    },
}

impl Clock {
    /// Tokio's clock, from now.
    pub(crate) fn tokio() -> Clock {
        Clock::Tokio {
            start: Utc::now(),
            base: tokio::time::Instant::now(),
        }
    }

    /// The time now, truncated to whole microseconds.
    pub(crate) fn now(&self) -> DateTime<Utc> {
        let now = match self {
            Clock::System => Utc::now(),
            Clock::Manual(clock) => clock.get(),
            Clock::Tokio { start, base } => {
                let elapsed = tokio::time::Instant::now().saturating_duration_since(*base);
                chrono::Duration::from_std(elapsed)
                    .ok()
                    .and_then(|d| start.checked_add_signed(d))
                    .unwrap_or(DateTime::<Utc>::MAX_UTC)
            }
        };
        now.trunc_subsecs(6)
    }

    /// Whether `other` is this clock (the same manual clock, both the system's, or both
    /// Tokio's: a store on Tokio's clock keeps the start it opened with).
    fn is(&self, other: &Clock) -> bool {
        match (self, other) {
            (Clock::System, Clock::System) | (Clock::Tokio { .. }, Clock::Tokio { .. }) => true,
            (Clock::Manual(a), Clock::Manual(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// A queue value waiting for work on a queue of the store.
#[derive(Debug)]
struct Watcher {
    /// The driver (queue value) it belongs to.
    driver: u64,
    hub: Weak<WakeHub>,
}

/// The tables of one store, the clock its statements read, and who waits for work on it.
pub(crate) struct Store {
    /// The name it is registered under; `None` for a private store.
    name: Option<String>,
    clock: Clock,
    tables: Arc<tokio::sync::Mutex<Tables>>,
    /// By queue name.
    watchers: Mutex<HashMap<String, Vec<Watcher>>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("name", &self.name)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

/// The named stores of this process. Weak: a store lives as long as a queue value on it.
static NAMED: LazyLock<Mutex<HashMap<String, Weak<Store>>>> = LazyLock::new(Mutex::default);

/// Makes driver ids (which queue value a watcher belongs to).
static DRIVERS: AtomicU64 = AtomicU64::new(1);

/// A new driver id.
pub(crate) fn driver_id() -> u64 {
    DRIVERS.fetch_add(1, Ordering::Relaxed)
}

impl Store {
    fn new(name: Option<String>, clock: Clock) -> Self {
        Store {
            name,
            clock,
            tables: Arc::default(),
            watchers: Mutex::default(),
        }
    }

    /// A new store that no other queue value can open.
    pub(crate) fn private(clock: Clock) -> Arc<Store> {
        Arc::new(Store::new(None, clock))
    }

    /// The store named `name`: the one that is open in this process, else a new one.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `clock` when the open store runs on another clock
    /// (queue values on one store share its clock, as processes share a database's).
    pub(crate) fn named(name: &str, clock: Clock) -> queue_core::Result<Arc<Store>> {
        let mut named = NAMED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(store) = named.get(name).and_then(Weak::upgrade) {
            // Let go of the registry first: if the other queue values on the store are dropped
            // meanwhile, dropping `store` below drops the store, which takes the registry's
            // lock to leave it.
            drop(named);
            if !store.clock.is(&clock) {
                return Err(Error::invalid(
                    "clock",
                    format!(
                        "must be the clock the open store {name:?} runs on: queue values on one \
                         store share its clock (pass the same ManualClock, tokio_clock() to \
                         each, or neither)"
                    ),
                ));
            }
            return Ok(store);
        }
        let store = Arc::new(Store::new(Some(name.to_owned()), clock));
        named.insert(name.to_owned(), Arc::downgrade(&store));
        Ok(store)
    }

    /// Its name, `None` for a private store.
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The time now by the store's clock.
    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Waits for the store's lock and holds it for one statement.
    pub(crate) async fn lock(&self) -> tokio::sync::MutexGuard<'_, Tables> {
        self.tables.lock().await
    }

    /// Waits for the store's lock and begins a transaction that holds it until it ends.
    pub(crate) async fn begin(&self) -> MemoryTx {
        MemoryTx {
            tables: self.tables.clone().lock_owned().await,
            undo: Vec::new(),
            notify: Vec::new(),
        }
    }

    /// Remembers that the queue value `driver` waits for work on `queue` through `hub`.
    pub(crate) fn watch(&self, driver: u64, queue: &str, hub: &Arc<WakeHub>) {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = watchers.get_mut(queue) {
            if !list.iter().any(|w| w.driver == driver) {
                list.push(Watcher {
                    driver,
                    hub: Arc::downgrade(hub),
                });
            }
        } else {
            watchers.insert(
                queue.to_owned(),
                vec![Watcher {
                    driver,
                    hub: Arc::downgrade(hub),
                }],
            );
        }
    }

    /// Wakes, for `jobs` new jobs of `queue`, every queue value waiting on it but `from`'s
    /// (which the engine wakes itself).
    pub(crate) fn notify(&self, from: u64, queue: &str, jobs: usize) {
        let hubs: Vec<Arc<WakeHub>> = {
            let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
            let Some(list) = watchers.get_mut(queue) else {
                return;
            };
            list.retain(|w| w.hub.strong_count() > 0);
            let hubs = list
                .iter()
                .filter(|w| w.driver != from)
                .filter_map(|w| w.hub.upgrade())
                .collect();
            if list.is_empty() {
                watchers.remove(queue);
            }
            hubs
        };
        for hub in hubs {
            hub.notify(queue, jobs);
        }
    }

    /// Forgets the watchers of the queue value `driver` (it is dropped).
    pub(crate) fn forget(&self, driver: u64) {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        watchers.retain(|_, list| {
            list.retain(|w| w.driver != driver);
            !list.is_empty()
        });
    }
}

impl Drop for Store {
    /// A named store leaves the registry with its last queue value, unless a newer store of
    /// the same name took its place meanwhile.
    fn drop(&mut self) {
        if let Some(name) = &self.name {
            let mut named = NAMED.lock().unwrap_or_else(|e| e.into_inner());
            if named.get(name).is_some_and(|w| w.strong_count() == 0) {
                named.remove(name);
            }
        }
    }
}

/// Runs one statement on `tables`: `f` makes its writes through a [`Writer`]; when it fails,
/// every write it made is undone, so the statement changes all or nothing. Returns its result
/// and its undo log.
pub(crate) fn statement<T>(
    tables: &mut Tables,
    f: impl FnOnce(&mut Writer<'_>) -> Result<T, MemoryError>,
) -> Result<(T, Vec<Undo>), MemoryError> {
    let mut w = Writer::new(tables);
    match f(&mut w) {
        Ok(value) => Ok((value, w.finish())),
        Err(e) => {
            w.abort();
            Err(e)
        }
    }
}

/// A transaction on an in-memory store: it holds the store's lock from its beginning to its
/// end (so it runs alone, serializably), and keeps the undo log of its statements, so that a
/// rollback returns every table exactly to where it was when it began. Dropped without a
/// commit, it rolls back. It is also the connection the driver's statements inside it run on,
/// and a migration session. While it is open, every other statement on the store waits (as
/// every other writer waits for SQLite's write lock), so whoever holds one runs only
/// statements on it until it ends.
pub struct MemoryTx {
    tables: OwnedMutexGuard<Tables>,
    undo: Vec<Undo>,
    /// Wake-ups to send when it commits: queue and jobs.
    notify: Vec<(String, usize)>,
}

impl std::fmt::Debug for MemoryTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTx")
            .field("writes", &self.undo.len())
            .finish_non_exhaustive()
    }
}

impl MemoryTx {
    /// Runs one statement inside the transaction (atomic by itself, as everywhere).
    pub(crate) fn statement<T>(
        &mut self,
        f: impl FnOnce(&mut Writer<'_>) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let (value, undo) = statement(&mut self.tables, f)?;
        self.undo.extend(undo);
        Ok(value)
    }

    /// The tables as this transaction sees them.
    pub(crate) fn tables(&self) -> &Tables {
        &self.tables
    }

    /// Queues a wake-up for `jobs` new jobs of `queue`, sent when the transaction commits.
    pub(crate) fn notify_on_commit(&mut self, queue: &str, jobs: usize) {
        self.notify.push((queue.to_owned(), jobs));
    }

    /// Keeps every write; returns the wake-ups to send now that they are visible.
    pub(crate) fn commit(mut self) -> Vec<(String, usize)> {
        self.undo.clear();
        std::mem::take(&mut self.notify)
    }

    /// Undoes every write (what dropping it without a commit does too).
    pub(crate) fn rollback(mut self) {
        let undo = std::mem::take(&mut self.undo);
        self.tables.undo(undo);
    }
}

impl Drop for MemoryTx {
    fn drop(&mut self) {
        let undo = std::mem::take(&mut self.undo);
        self.tables.undo(undo);
    }
}

/// A savepoint in a [`MemoryTx`]: what the statements run through it wrote, and the wake-ups
/// they queued, are undone by a rollback to it (also when it is dropped without a release),
/// and kept, as part of the transaction, by a release.
pub struct MemorySavepoint<'t> {
    tx: &'t mut MemoryTx,
    /// The transaction's writes and queued wake-ups when it was set.
    writes: usize,
    wakeups: usize,
    open: bool,
}

impl std::fmt::Debug for MemorySavepoint<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemorySavepoint")
            .field("writes", &(self.tx.undo.len() - self.writes))
            .finish_non_exhaustive()
    }
}

impl<'t> MemorySavepoint<'t> {
    /// Sets a savepoint at the current end of `tx`.
    pub(crate) fn set(tx: &'t mut MemoryTx) -> Self {
        let (writes, wakeups) = (tx.undo.len(), tx.notify.len());
        MemorySavepoint {
            tx,
            writes,
            wakeups,
            open: true,
        }
    }

    /// Keeps what was written since it was set.
    pub(crate) fn release(mut self) {
        self.open = false;
    }

    /// Undoes what was written since it was set (what dropping it without a release does too).
    pub(crate) fn rollback(self) {}

    fn undo(&mut self) {
        let later = self.tx.undo.split_off(self.writes);
        self.tx.tables.undo(later);
        self.tx.notify.truncate(self.wakeups);
        self.open = false;
    }
}

impl std::ops::Deref for MemorySavepoint<'_> {
    type Target = MemoryTx;

    fn deref(&self) -> &MemoryTx {
        self.tx
    }
}

impl std::ops::DerefMut for MemorySavepoint<'_> {
    fn deref_mut(&mut self) -> &mut MemoryTx {
        self.tx
    }
}

impl Drop for MemorySavepoint<'_> {
    fn drop(&mut self) {
        if self.open {
            self.undo();
        }
    }
}
