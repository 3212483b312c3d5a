//! [`MemoryQueueBuilder`]: which store, which clock (the system's, a manual one, Tokio's), and
//! the settings every backend shares.

use std::sync::Arc;
use std::time::Duration;

use queue_core::engine::{CommonOptions, RemoteWakeups};
use queue_core::{
    Capabilities, ClaimStrategy, Dialect, Engine, EngineProfile, Error, ManualClock, Result,
    ServerKind, Wakeups,
};

use crate::driver::MemoryDriver;
use crate::queue::MemoryQueue;
use crate::store::{Clock, Store};
use crate::LOG_TARGET;

/// The longest store name.
const MAX_NAME: usize = 200;

/// Which store a builder opens.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    /// A new store of its own.
    Private,
    /// The store of this name.
    Named(String),
    /// What this `memory://` URL says.
    Url(String),
}

/// Configures and opens a [`MemoryQueue`]. Start with [`MemoryQueue::builder`].
///
/// Claim strategies: [`ClaimStrategy::WriteLock`] (the default: one claim under the store's
/// lock) or [`ClaimStrategy::Optimistic`] (the engine reads candidates, then claims each with a
/// version-guarded write). [`ClaimStrategy::SkipLocked`] has no meaning without row locks and
/// makes [`connect`](Self::connect) fail with [`Error::InvalidInput`]. The store has no
/// connections: `max_connections` is refused, `connect_timeout` never comes into play (opening
/// a store never waits), and `lock_retries` neither (a statement never meets a lock conflict).
#[derive(Clone, Debug)]
pub struct MemoryQueueBuilder {
    target: Target,
    clock: ClockChoice,
    common: CommonOptions,
}

/// Which clock a builder gives the store.
#[derive(Clone, Debug)]
enum ClockChoice {
    System,
    Manual(Arc<ManualClock>),
    Tokio,
}

impl MemoryQueueBuilder {
    pub(crate) fn new() -> Self {
        MemoryQueueBuilder {
            target: Target::Private,
            clock: ClockChoice::System,
            common: CommonOptions::default(),
        }
    }

    queue_core::common_builder_methods!();

    /// Opens the process-wide store named `name` instead of a private one: every queue value
    /// opened on the same name sees the same jobs, as processes on one database do. The store
    /// lives as long as a queue value on it; after the last is dropped, the name opens an
    /// empty store again. 1 to 200 characters, none of them a control character, whitespace,
    /// `/`, `?` or `#`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.target = Target::Named(name.into());
        self
    }

    /// Opens the store a URL names: `memory://` a private store, `memory://NAME` the store
    /// named `NAME` (see [`name`](Self::name)). Checked by [`connect`](Self::connect).
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.target = Target::Url(url.into());
        self
    }

    /// The clock of the store, instead of the system's: the queue's `now` (run times, leases,
    /// rate windows, retention ages, schedules) reads `clock`, which moves only when the test
    /// moves it. Queue values on one named store share its clock: each must be given the same
    /// one (or none).
    pub fn clock(mut self, clock: Arc<ManualClock>) -> Self {
        self.clock = ClockChoice::Manual(clock);
        self
    }

    /// The store's clock follows Tokio's, instead of the system's: it shows the system's time
    /// when the store opens, then moves as `tokio::time::Instant` does. For tests that run in
    /// paused time (`#[tokio::test(start_paused = true)]`, `tokio::time::advance`): a worker's
    /// leases, heartbeats, retries and rescues are then timed by one clock, the one the test
    /// moves, so a lease expires when Tokio's timers say it has. Outside paused time it moves
    /// with the real time, as Tokio's clock does. Queue values on one named store share its
    /// clock: each must be given this one too (the store keeps the start it opened with).
    /// Replaces [`clock`](Self::clock), and the other way round.
    pub fn tokio_clock(mut self) -> Self {
        self.clock = ClockChoice::Tokio;
        self
    }

    /// The store's name from the target, `None` for a private store.
    fn store_name(&self) -> Result<Option<String>> {
        let (field, name) = match &self.target {
            Target::Private => return Ok(None),
            Target::Named(name) => ("name", name.as_str()),
            Target::Url(url) => {
                let url = url.trim();
                let rest = url
                    .get(.."memory://".len())
                    .filter(|scheme| scheme.eq_ignore_ascii_case("memory://"))
                    .map(|_| &url["memory://".len()..])
                    .ok_or_else(|| {
                        Error::invalid(
                            "url",
                            "must be memory:// (a private store) or memory://NAME (a named one)",
                        )
                    })?;
                if rest.is_empty() {
                    return Ok(None);
                }
                ("url", rest)
            }
        };
        check_name(field, name)?;
        Ok(Some(name.to_owned()))
    }

    /// Opens the store (a private one, or the named store, made when no queue value has it
    /// open). Does not migrate: call [`migrate`](queue_core::Queue::migrate), as on a database.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad setting, URL or name, and naming `clock` when the
    /// named store is open on another clock.
    pub async fn connect(self) -> Result<MemoryQueue> {
        let claim = self.common.validate(
            "the in-memory store",
            &[ClaimStrategy::WriteLock, ClaimStrategy::Optimistic],
        )?;
        if self.common.max_connections.is_some() {
            return Err(Error::invalid(
                "max_connections",
                "does not apply to the in-memory store, which has no connections",
            ));
        }
        let name = self.store_name()?;
        let clock = match self.clock {
            ClockChoice::System => Clock::System,
            ClockChoice::Manual(clock) => Clock::Manual(clock),
            ClockChoice::Tokio => Clock::tokio(),
        };
        let store = match &name {
            Some(name) => Store::named(name, clock)?,
            None => Store::private(clock),
        };
        tracing::debug!(
            target: LOG_TARGET,
            store = name.as_deref().unwrap_or("(private)"),
            claim = claim.as_str(),
            "opened"
        );
        let caps = Capabilities {
            dialect: Dialect::Memory,
            claim,
            wakeups: Wakeups::ListenNotify,
            time_precision: Duration::from_micros(1),
            transactions: false,
            server_version: None,
            profile: EngineProfile::of(ServerKind::Memory),
            limits: self.common.limits.clone(),
        };
        // Wake-ups cost nothing to send here, so none is coalesced.
        let remote = RemoteWakeups::Notify {
            window: Duration::ZERO,
        };
        Ok(MemoryQueue {
            engine: Engine::new(MemoryDriver::new(store), caps, &self.common, remote),
        })
    }
}

/// A store's name: 1 to [`MAX_NAME`] characters, no control characters, whitespace, `/`, `?`
/// or `#` (which a URL would read otherwise).
fn check_name(field: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(Error::invalid(
            field,
            format!("a store's name must be 1 to {MAX_NAME} characters"),
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| c.is_control() || c.is_whitespace() || matches!(c, '/' | '?' | '#'))
    {
        return Err(Error::invalid(
            field,
            format!("a store's name must not contain {c:?}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(e: Error) -> String {
        match e {
            Error::InvalidInput { field, .. } => field,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn urls_name_stores() {
        let name = |url: &str| MemoryQueueBuilder::new().url(url).store_name();
        assert_eq!(name("memory://").unwrap(), None);
        assert_eq!(name(" memory:// ").unwrap(), None);
        assert_eq!(name("memory://jobs").unwrap().as_deref(), Some("jobs"));
        assert_eq!(name("MEMORY://Jobs").unwrap().as_deref(), Some("Jobs"));
        assert_eq!(field(name("sqlite://jobs.db").unwrap_err()), "url");
        assert_eq!(field(name("memory:jobs").unwrap_err()), "url");
        assert_eq!(field(name("memory://a/b").unwrap_err()), "url");
        assert_eq!(field(name("memory://a?x=1").unwrap_err()), "url");
        let long = format!("memory://{}", "x".repeat(MAX_NAME + 1));
        assert_eq!(field(name(&long).unwrap_err()), "url");
    }

    #[test]
    fn names_are_checked() {
        let name = |n: &str| MemoryQueueBuilder::new().name(n).store_name();
        assert_eq!(name("tests-1").unwrap().as_deref(), Some("tests-1"));
        assert_eq!(field(name("").unwrap_err()), "name");
        assert_eq!(field(name("a b").unwrap_err()), "name");
        assert_eq!(field(name("a\nb").unwrap_err()), "name");
        assert_eq!(MemoryQueueBuilder::new().store_name().unwrap(), None);
    }

    #[tokio::test]
    async fn settings_that_do_not_apply_are_refused() {
        let e = MemoryQueueBuilder::new()
            .claim_strategy(ClaimStrategy::SkipLocked)
            .connect()
            .await
            .unwrap_err();
        assert_eq!(field(e), "claim_strategy");
        let e = MemoryQueueBuilder::new()
            .max_connections(4)
            .connect()
            .await
            .unwrap_err();
        assert_eq!(field(e), "max_connections");
    }
}
