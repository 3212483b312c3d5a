//! [`Faults`]: latency, outages, errors and panics injected into the statements of one queue
//! value, and counts of the statements it ran, for tests of code above the engine (a worker, a
//! scheduler, an application's retry logic) against a database that misbehaves.
//!
//! A fault acts in the driver, below the engine: the engine meets it as it would meet a
//! database's error (an unavailable database is [`queue_core::Error::Unavailable`], a permanent
//! error [`queue_core::Error::Database`]), so its own handling of it runs, and so does the
//! caller's.

use std::fmt;
use std::ops::BitOr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::error::MemoryError;

macro_rules! statements {
    ($($variant:ident => $name:literal,)*) => {
        /// A statement the in-memory driver runs: one call of the engine's
        /// [`Driver`](queue_core::engine::Driver), named as the method and the catalogue
        /// (`queue_core::engine::statements::CATALOGUE`) name it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Statement {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant,
            )*
        }

        impl Statement {
            /// Every statement.
            pub const ALL: &'static [Statement] = &[$(Statement::$variant,)*];

            /// Its name: the driver method's, and the catalogue's.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Statement::$variant => $name,)*
                }
            }
        }
    };
}

statements! {
    MigrationLock => "migration_lock",
    MigrationApplied => "migration_applied",
    MigrationApply => "migration_apply",
    MigrationUnlock => "migration_unlock",
    Now => "now",
    Notify => "notify",
    Watch => "watch",
    TxBegin => "tx_begin",
    TxCommit => "tx_commit",
    TxRollback => "tx_rollback",
    Savepoint => "savepoint",
    SavepointRelease => "savepoint_release",
    SavepointRollback => "savepoint_rollback",
    JobInsert => "job_insert",
    JobInsertUnique => "job_insert_unique",
    JobUniqueReplace => "job_unique_replace",
    JobUniqueHolder => "job_unique_holder",
    JobDedupLive => "job_dedup_live",
    JobClaim => "job_claim",
    JobClaimIn => "job_claim_in",
    JobCandidates => "job_candidates",
    JobClaimCandidates => "job_claim_candidates",
    JobComplete => "job_complete",
    JobCompleteMany => "job_complete_many",
    JobCompleteAndClaim => "job_complete_and_claim",
    JobFailRetry => "job_fail_retry",
    JobFailDead => "job_fail_dead",
    JobSnooze => "job_snooze",
    JobMetaGet => "job_meta_get",
    JobMetaSet => "job_meta_set",
    JobRelease => "job_release",
    JobExtend => "job_extend",
    JobState => "job_state",
    JobExpired => "job_expired",
    JobRescue => "job_rescue",
    JobCancel => "job_cancel",
    JobRetry => "job_retry",
    JobReschedule => "job_reschedule",
    JobGet => "job_get",
    JobList => "job_list",
    JobStats => "job_stats",
    JobPrune => "job_prune",
    JobIds => "job_ids",
    JobCount => "job_count",
    JobCancelMany => "job_cancel_many",
    JobRetryMany => "job_retry_many",
    JobDeleteMany => "job_delete_many",
    JobWorkflows => "job_workflows",
    JobDependentsCount => "job_dependents_count",
    MaintenanceClaim => "maintenance_claim",
    MaintenanceRelease => "maintenance_release",
    QueueControlGet => "queue_control_get",
    QueueControlLock => "queue_control_lock",
    QueueControlList => "queue_control_list",
    QueueSetPaused => "queue_set_paused",
    QueueSetLimit => "queue_set_limit",
    QueueSetRate => "queue_set_rate",
    QueueRateState => "queue_rate_state",
    QueueRateRecord => "queue_rate_record",
    QueueSetKeyLimit => "queue_set_key_limit",
    QueueSetKeyRate => "queue_set_key_rate",
    QueueKeyRateGet => "queue_key_rate_get",
    QueueKeyRatePut => "queue_key_rate_put",
    QueueKeyRatePrune => "queue_key_rate_prune",
    QueueSetFair => "queue_set_fair",
    QueueKeyCursor => "queue_key_cursor",
    JobKeyLeases => "job_key_leases",
    JobKeyNext => "job_key_next",
    JobClaimKey => "job_claim_key",
    JobKeyWaiting => "job_key_waiting",
    JobLiveLeases => "job_live_leases",
    ScheduleGet => "schedule_get",
    ScheduleList => "schedule_list",
    ScheduleInsert => "schedule_insert",
    ScheduleUpdate => "schedule_update",
    ScheduleTouch => "schedule_touch",
    ScheduleAdvance => "schedule_advance",
    ScheduleDelete => "schedule_delete",
    WorkflowInsert => "workflow_insert",
    WorkflowStepsInsert => "workflow_steps_insert",
    WorkflowDepsInsert => "workflow_deps_insert",
    WorkflowLock => "workflow_lock",
    WorkflowSeal => "workflow_seal",
    WorkflowDependents => "workflow_dependents",
    WorkflowBlock => "workflow_block",
    WorkflowPromote => "workflow_promote",
    WorkflowReopen => "workflow_reopen",
    WorkflowBlocked => "workflow_blocked",
    WorkflowWaiting => "workflow_waiting",
    WorkflowGet => "workflow_get",
    WorkflowJobs => "workflow_jobs",
    WorkflowEdges => "workflow_edges",
    WorkflowList => "workflow_list",
    WorkflowPruneLock => "workflow_prune_lock",
    WorkflowPrune => "workflow_prune",
    JobDeps => "job_deps",
}

// A set of statements is a bit set of 128.
const _: () = assert!(Statement::ALL.len() <= 128);

impl Statement {
    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`Statement`]s, which a fault or a count applies to: one statement
/// (`Statement::JobClaim.into()`), several (`Statement::JobClaim | Statement::JobCompleteAndClaim`,
/// or `Statements::of(&[..])`), or [`Statements::ALL`].
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Statements(u128);

impl Statements {
    /// Every statement.
    pub const ALL: Statements = Statements::of(Statement::ALL);

    /// No statement.
    pub const NONE: Statements = Statements(0);

    /// The statements of `list`.
    pub const fn of(list: &[Statement]) -> Statements {
        let mut bits = 0u128;
        let mut i = 0;
        while i < list.len() {
            bits |= 1 << (list[i] as usize);
            i += 1;
        }
        Statements(bits)
    }

    /// Whether `statement` is one of them.
    pub const fn contains(self, statement: Statement) -> bool {
        self.0 & (1 << (statement as usize)) != 0
    }

    /// They, in the order of [`Statement::ALL`].
    pub fn iter(self) -> impl Iterator<Item = Statement> {
        Statement::ALL
            .iter()
            .copied()
            .filter(move |s| self.contains(*s))
    }
}

impl fmt::Debug for Statements {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Statements::ALL {
            return f.write_str("ALL");
        }
        f.debug_set()
            .entries(self.iter().map(Statement::name))
            .finish()
    }
}

impl From<Statement> for Statements {
    fn from(statement: Statement) -> Self {
        Statements::of(&[statement])
    }
}

impl<const N: usize> From<[Statement; N]> for Statements {
    fn from(list: [Statement; N]) -> Self {
        Statements::of(&list)
    }
}

impl<T: Into<Statements>> BitOr<T> for Statements {
    type Output = Statements;

    fn bitor(self, other: T) -> Statements {
        Statements(self.0 | other.into().0)
    }
}

impl<T: Into<Statements>> BitOr<T> for Statement {
    type Output = Statements;

    fn bitor(self, other: T) -> Statements {
        Statements::from(self) | other
    }
}

/// How many statements a fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Times {
    /// The next this many statements it applies to, then it is spent.
    Next(u32),
    /// Every statement it applies to, until [`Faults::clear`].
    UntilCleared,
}

/// What an injected fault does to a statement it strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// Fails with [`MemoryError::Unavailable`].
    Unavailable,
    /// Fails with [`MemoryError::Injected`].
    Error,
    /// Panics.
    Panic,
}

/// A fault waiting for statements to strike.
#[derive(Debug)]
struct Rule {
    on: Statements,
    action: Action,
    /// Strikes left; `None`: until cleared.
    left: Option<u32>,
}

/// Counts of the statements of one set: started, running now, and the most that ran at once.
#[derive(Debug)]
struct Tally {
    on: Statements,
    calls: AtomicU64,
    running: AtomicU64,
    most: AtomicU64,
}

impl Tally {
    fn start(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
    }

    fn end(&self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Debug)]
struct State {
    /// Every statement fails as unavailable (the database is down).
    down: AtomicBool,
    latencies: Mutex<Vec<(Statements, Duration)>>,
    rules: Mutex<Vec<Rule>>,
    /// Per statement, by [`Statement::index`].
    calls: Vec<AtomicU64>,
    running: Vec<AtomicU64>,
    tallies: Mutex<Vec<Arc<Tally>>>,
}

impl Default for State {
    fn default() -> Self {
        let counters = || {
            (0..Statement::ALL.len())
                .map(|_| AtomicU64::new(0))
                .collect()
        };
        State {
            down: AtomicBool::new(false),
            latencies: Mutex::default(),
            rules: Mutex::default(),
            calls: counters(),
            running: counters(),
            tallies: Mutex::default(),
        }
    }
}

/// Takes a lock whose holder cannot have left its data half-changed (every change under these
/// locks is one push, one retain or one decrement), even after a panic elsewhere.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The faults of one queue value (and its clones), and counts of the statements it ran; from
/// [`MemoryQueue::faults`](crate::MemoryQueue::faults). Cheap to clone: clones are one handle.
///
/// Faults apply to the statements of the queue value they were taken from: other queue values
/// on the same named store are not affected, as another process whose connection is fine is
/// not, so a test can watch the jobs through one while the other is cut off.
///
/// - **The database is down**: [`down`](Self::down), and back [`up`](Self::up): meanwhile
///   every statement fails with [`MemoryError::Unavailable`], which the engine reports as
///   [`queue_core::Error::Unavailable`].
/// - **Some statements fail**: [`unavailable`](Self::unavailable) (a transient error),
///   [`error`](Self::error) (a permanent database error, [`queue_core::Error::Database`]) or
///   [`panic`](Self::panic), for the [next N](Times::Next) statements of a set or
///   [until cleared](Times::UntilCleared). Of two faults that apply to a statement, the one
///   injected first strikes; a spent fault is forgotten.
/// - **Latency**: [`latency`](Self::latency): each statement of a set waits that long (Tokio's
///   time, so paused-time tests advance through it) before it takes the store's lock, and
///   then meets the faults in force at that moment. Latencies that apply to one statement add
///   up. A statement dropped while it waits does nothing.
/// - **Counts**: [`calls`](Self::calls) of each statement, [`running`](Self::running) now, and
///   with [`tally`](Self::tally) the most of a set that ran at once. A statement is counted
///   when it starts, whether it fails or not; it runs until it returns (latency included).
///
/// Every statement of [`Statement`] is counted and meets these faults, except
/// [`Statement::Watch`] (the registration for other queue values' wake-ups, made at each wait
/// for work), which is only counted and panicked: it returns nothing and does not wait.
///
/// Until the first call of [`MemoryQueue::faults`](crate::MemoryQueue::faults) on a queue
/// value, its statements check for faults with one atomic load and count nothing; counts start
/// there.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    state: Arc<State>,
}

impl Faults {
    /// The database is down from now on: every statement fails with
    /// [`MemoryError::Unavailable`] until [`up`](Self::up) (or [`clear`](Self::clear)).
    pub fn down(&self) {
        self.state.down.store(true, Ordering::SeqCst);
    }

    /// The database is back: ends what [`down`](Self::down) began (other faults stay).
    pub fn up(&self) {
        self.state.down.store(false, Ordering::SeqCst);
    }

    /// Whether the database is down (between [`down`](Self::down) and [`up`](Self::up)).
    pub fn is_down(&self) -> bool {
        self.state.down.load(Ordering::SeqCst)
    }

    /// The statements of `on` fail with [`MemoryError::Unavailable`] (the engine's
    /// [`queue_core::Error::Unavailable`], which callers may try again), `times`.
    pub fn unavailable(&self, on: impl Into<Statements>, times: Times) {
        self.inject(on.into(), Action::Unavailable, times);
    }

    /// The statements of `on` fail with [`MemoryError::Injected`] (the engine's
    /// [`queue_core::Error::Database`], which callers do not try again), `times`.
    pub fn error(&self, on: impl Into<Statements>, times: Times) {
        self.inject(on.into(), Action::Error, times);
    }

    /// The statements of `on` panic, `times`, before they touch the store (as a driver with a
    /// bug would): the panic unwinds through the engine into the caller's task.
    pub fn panic(&self, on: impl Into<Statements>, times: Times) {
        self.inject(on.into(), Action::Panic, times);
    }

    /// Each statement of `on` waits `by` before it runs, until [`clear`](Self::clear).
    pub fn latency(&self, on: impl Into<Statements>, by: Duration) {
        lock(&self.state.latencies).push((on.into(), by));
    }

    /// Removes every injected fault: latencies, failures not yet spent, and the outage of
    /// [`down`](Self::down). Counts are kept.
    pub fn clear(&self) {
        self.up();
        lock(&self.state.latencies).clear();
        lock(&self.state.rules).clear();
    }

    /// How many statements of `on` started since the first
    /// [`MemoryQueue::faults`](crate::MemoryQueue::faults) of this queue value.
    pub fn calls(&self, on: impl Into<Statements>) -> u64 {
        on.into()
            .iter()
            .map(|s| self.state.calls[s.index()].load(Ordering::SeqCst))
            .sum()
    }

    /// How many statements of `on` are running now (waiting for their latency, for the
    /// store's lock, or running).
    pub fn running(&self, on: impl Into<Statements>) -> u64 {
        on.into()
            .iter()
            .map(|s| self.state.running[s.index()].load(Ordering::SeqCst))
            .sum()
    }

    /// Counts the statements of `on` from now on, as one set: how many started, how many run
    /// now, and the most that ran at once (e.g. claims in flight, whichever statement each
    /// claim is).
    pub fn tally(&self, on: impl Into<Statements>) -> Tallied {
        let tally = Arc::new(Tally {
            on: on.into(),
            calls: AtomicU64::new(0),
            running: AtomicU64::new(0),
            most: AtomicU64::new(0),
        });
        lock(&self.state.tallies).push(tally.clone());
        Tallied { tally }
    }

    fn inject(&self, on: Statements, action: Action, times: Times) {
        let left = match times {
            Times::Next(0) => return,
            Times::Next(n) => Some(n),
            Times::UntilCleared => None,
        };
        lock(&self.state.rules).push(Rule { on, action, left });
    }

    /// The fault that strikes `statement` now, if any, spending one strike of it.
    fn strike(&self, statement: Statement) -> Option<Action> {
        if self.is_down() && statement != Statement::Watch {
            return Some(Action::Unavailable);
        }
        let mut rules = lock(&self.state.rules);
        let i = rules.iter().position(|r| {
            r.on.contains(statement) && (statement != Statement::Watch || r.action == Action::Panic)
        })?;
        let action = rules[i].action;
        if let Some(left) = &mut rules[i].left {
            *left -= 1;
            if *left == 0 {
                rules.remove(i);
            }
        }
        Some(action)
    }

    /// Counts a statement that starts; the returned call counts it as running until dropped.
    fn start(&self, statement: Statement) -> Call<'_> {
        let state = &*self.state;
        state.calls[statement.index()].fetch_add(1, Ordering::SeqCst);
        state.running[statement.index()].fetch_add(1, Ordering::SeqCst);
        let tallies: Vec<Arc<Tally>> = lock(&state.tallies)
            .iter()
            .filter(|t| t.on.contains(statement))
            .cloned()
            .collect();
        for tally in &tallies {
            tally.start();
        }
        Call {
            state,
            statement,
            tallies,
        }
    }

    /// A statement begins: counted, then delayed by its latency, then struck by the fault in
    /// force, if any. The call it returns is the statement running; keep it until the
    /// statement returns.
    pub(crate) async fn enter(&self, statement: Statement) -> Result<Call<'_>, MemoryError> {
        let call = self.start(statement);
        let latency: Duration = lock(&self.state.latencies)
            .iter()
            .filter(|(on, _)| on.contains(statement))
            .map(|(_, by)| *by)
            .sum();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        match self.strike(statement) {
            None => Ok(call),
            Some(Action::Unavailable) => Err(MemoryError::Unavailable {
                statement: statement.name(),
            }),
            Some(Action::Error) => Err(MemoryError::Injected {
                statement: statement.name(),
            }),
            Some(Action::Panic) => panic!("{statement}: an injected panic"),
        }
    }

    /// A statement that cannot wait or fail begins ([`Statement::Watch`]): counted, and
    /// panicked when a panic is injected for it.
    pub(crate) fn enter_sync(&self, statement: Statement) {
        let _call = self.start(statement);
        if let Some(Action::Panic) = self.strike(statement) {
            panic!("{statement}: an injected panic");
        }
    }
}

/// A statement running: counted as running until it is dropped (also when the statement fails,
/// panics, or is dropped while it waits).
#[derive(Debug)]
pub(crate) struct Call<'a> {
    state: &'a State,
    statement: Statement,
    tallies: Vec<Arc<Tally>>,
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        self.state.running[self.statement.index()].fetch_sub(1, Ordering::SeqCst);
        for tally in &self.tallies {
            tally.end();
        }
    }
}

/// The counts of one set of statements since [`Faults::tally`] began them.
#[derive(Clone, Debug)]
pub struct Tallied {
    tally: Arc<Tally>,
}

impl Tallied {
    /// How many statements of the set started.
    pub fn calls(&self) -> u64 {
        self.tally.calls.load(Ordering::SeqCst)
    }

    /// How many run now.
    pub fn running(&self) -> u64 {
        self.tally.running.load(Ordering::SeqCst)
    }

    /// The most that ran at once.
    pub fn most_at_once(&self) -> u64 {
        self.tally.most.load(Ordering::SeqCst)
    }
}
