//! [`PostgresQueueBuilder`]: configuration, validation and connecting.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use queue_core::engine::{CommonOptions, RemoteWakeups, Retirement, SLOW_STATEMENT};
use queue_core::validate::{self, redact_url};
use queue_core::{
    Capabilities, ClaimStrategy, Dialect, Engine, Error, Profile, Result, ServerKind, Wakeups,
};
use sqlx::ConnectOptions;

use crate::driver::PgDriver;
use crate::listen::{channel_name, Listener};
use crate::nodelay::NoDelay;
use crate::nodes::{self, Nodes, Target, UrlWakeups};
use crate::queue::PostgresQueue;
use crate::sql::Statements;

/// Pooled connections unless set otherwise.
const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// Configures and connects a [`PostgresQueue`]. Made by [`PostgresQueue::builder`].
#[derive(Clone)]
pub struct PostgresQueueBuilder {
    url: String,
    schema: String,
    common: CommonOptions,
    notify: bool,
    notify_window: Duration,
    listen: bool,
    listen_url: Option<String>,
    profile: Profile,
    transaction_pooler: bool,
    finished_partitions: Option<Duration>,
}

impl fmt::Debug for PostgresQueueBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresQueueBuilder")
            .field("url", &redact_url(&self.url))
            .field("schema", &self.schema)
            .field("common", &self.common)
            .field("notify", &self.notify)
            .field("notify_window", &self.notify_window)
            .field("listen", &self.listen)
            .field("listen_url", &self.listen_url.as_deref().map(redact_url))
            .field("profile", &self.profile)
            .field("transaction_pooler", &self.transaction_pooler)
            .field("finished_partitions", &self.finished_partitions)
            .finish()
    }
}

impl PostgresQueueBuilder {
    pub(crate) fn new(url: String) -> Self {
        PostgresQueueBuilder {
            url,
            schema: "queue".into(),
            common: CommonOptions::default(),
            notify: true,
            notify_window: Duration::from_millis(5),
            listen: true,
            listen_url: None,
            profile: Profile::Detect,
            transaction_pooler: false,
            finished_partitions: None,
        }
    }

    queue_core::common_builder_methods!();

    /// The schema holding the queue's tables (default `queue`); a plain identifier.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Whether pushes send a `NOTIFY` so that idle workers in other processes wake at once
    /// (default `true`). With `false`, workers elsewhere find new jobs at their next poll.
    pub fn notify(mut self, notify: bool) -> Self {
        self.notify = notify;
        self
    }

    /// Coalesces the NOTIFYs of single pushes to one queue (default 5 ms; zero: one per push).
    ///
    /// Notifying commits take PostgreSQL's database-wide notification lock one at a time, so a
    /// NOTIFY per push halves the rate of concurrent pushes. Within the window after a push that
    /// notified, pushes skip it, and one trailing NOTIFY follows at the end of the window: an idle
    /// worker is still woken by the first push at once, and no push waits longer than the
    /// window. Pushes inside a caller's transaction and batch pushes always notify (once per
    /// queue and transaction).
    pub fn notify_window(mut self, window: Duration) -> Self {
        self.notify_window = window;
        self
    }

    /// Whether `wait_for_work` LISTENs for other processes' pushes (default `true`). With
    /// `false` no LISTEN connection is made, and workers find other processes' jobs at their
    /// next poll.
    pub fn listen(mut self, listen: bool) -> Self {
        self.listen = listen;
        self
    }

    /// Poll-only wake-ups: no NOTIFY in pushes and no LISTEN connection (the same as
    /// `.notify(false).listen(false)`, or `wakeups=poll` in the URL). For a pooler in
    /// transaction mode (PgBouncer), where a LISTEN never receives anything, and for engines
    /// without LISTEN/NOTIFY. Workers find other processes' jobs at their next poll; pushes
    /// through the same queue value still wake its own workers at once.
    pub fn poll_only(self) -> Self {
        self.notify(false).listen(false)
    }

    /// A separate URL for the LISTEN connection, e.g. a direct connection to the server while
    /// the queries go through a pooler in transaction mode (which cannot deliver
    /// notifications). It may list several hosts and carry `target_session_attrs`, as the
    /// queue's URL may.
    pub fn listen_url(mut self, url: impl Into<String>) -> Self {
        self.listen_url = Some(url.into());
        self
    }

    /// Whether the URL reaches PostgreSQL through a pooler in transaction mode (PgBouncer's
    /// `pool_mode = transaction`; default `false`; `pooler=transaction` in the URL does the
    /// same and wins, `pooler=none` turns it off). Such a pooler may give each transaction, and
    /// each statement outside one, a different server connection, which breaks prepared
    /// statements and LISTEN. The queue then keeps no prepared statements, runs every statement
    /// outside a transaction in one of its own (two more round trips each), and does not
    /// LISTEN through the pooler: give [`listen_url`](Self::listen_url) a direct connection to
    /// have cross-process wake-ups, or workers find other processes' jobs at their next poll.
    /// Session mode needs none of this.
    pub fn transaction_pooler(mut self, behind: bool) -> Self {
        self.transaction_pooler = behind;
        self
    }

    /// Which engine to treat the server as (default: detected at connect from `version()` and
    /// the installed extensions: PostgreSQL, CockroachDB, YugabyteDB, Citus). `profile=...` in
    /// the URL does the same and wins. The profile's flags choose the statements: without
    /// `skip_locked` or `volatile_in_update` the claim is optimistic with lease tokens made by
    /// the client (and `ClaimStrategy::SkipLocked` is refused), without `listen_notify` the
    /// queue is poll-only, without `advisory_locks` migrations are serialized by a lock row.
    /// [`Profile::Distributed`] turns every one of them off.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Keeps finished jobs in time partitions of `every` (a whole number of days from one to
    /// seven; a day is the usual choice), turned on by the next
    /// [`migrate`](queue_core::Queue::migrate) of this queue, once for the schema. Completed,
    /// dead and cancelled jobs then move to a table partitioned by state and by finish time,
    /// and retention drops whole partitions instead of deleting rows: a round over millions of
    /// finished jobs takes milliseconds and leaves no dead rows behind. Jobs that need their
    /// row beside the live ones stay where they are, deleted by rows as before: the steps of a
    /// workflow (a workflow goes as a whole) and jobs whose uniqueness covers the state they
    /// finished in. Reads (`get`, `list`, stats, bulk actions, the dashboard) see both.
    ///
    /// Turning it on is online: it makes new tables and touches no row; the finished jobs
    /// already there stay where they are and go by rows as they age. A retention rule must then
    /// be at least `every` (a partition goes when its newest job is old enough, so a job is
    /// kept for up to `every` longer than its rule). The interval is chosen once: a later
    /// migration with another interval fails and changes nothing; one without this option
    /// leaves the partitions on. Processes that connected before it was turned on finish jobs
    /// in place until they read the layout again (within a minute), which is correct, only not
    /// partitioned. See the PostgreSQL guide (`docs/guide/postgres-partitions.md`).
    pub fn finished_partitions(mut self, every: Duration) -> Self {
        self.finished_partitions = Some(every);
        self
    }

    fn check(&self) -> Result<(ClaimStrategy, Target, Option<Target>)> {
        validate::identifier("schema", &self.schema)?;
        check_partitions("finished_partitions", self.finished_partitions)?;
        let claim = self.common.validate(
            "PostgreSQL",
            &[ClaimStrategy::SkipLocked, ClaimStrategy::Optimistic],
        )?;
        if self.notify_window > Duration::from_secs(1) {
            return Err(Error::invalid("notify_window", "must be at most 1 s"));
        }
        let url = nodes::parse("url", &self.url)?;
        check_partitions("url", url.finished_partitions)?;
        let listen = self
            .listen_url
            .as_deref()
            .map(|u| nodes::parse("listen_url", u))
            .transpose()?;
        if listen.as_ref().and_then(|t| t.transaction_pooler) == Some(true) {
            return Err(Error::invalid(
                "listen_url",
                "must be a direct connection: a pooler in transaction mode cannot keep a LISTEN \
                 (remove pooler=transaction)",
            ));
        }
        Ok((
            claim,
            url.with(own_options),
            listen.map(|t| t.with(own_options)),
        ))
    }

    /// Validates the configuration and connects (without migrating; see
    /// [`queue_core::Queue::migrate`]).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad setting; [`Error::Unavailable`] when no connection could
    /// be made within the connect timeout.
    pub async fn connect(self) -> Result<PostgresQueue> {
        let (claim, target, listen_target) = self.check()?;
        let pinned = target.transaction_pooler.unwrap_or(self.transaction_pooler);
        let (mut notify, mut listen) = match target.wakeups {
            Some(UrlWakeups::Poll) => (false, false),
            Some(UrlWakeups::Notify) => (true, true),
            None => (self.notify, self.listen),
        };
        if pinned && listen_target.is_none() {
            // A LISTEN through the pooler would sit on a server connection that the pooler
            // hands to others and hear nothing: refused when asked for by name, otherwise off.
            if target.wakeups == Some(UrlWakeups::Notify) {
                return Err(Error::invalid(
                    "url",
                    "wakeups=notify cannot LISTEN through a pooler in transaction mode \
                     (pooler=transaction): give a listen_url with a direct connection, or use \
                     wakeups=poll",
                ));
            }
            listen = false;
        }
        let target = if pinned {
            // Named prepared statements live on one server connection of the pooler's.
            target.with(|o| o.statement_cache_capacity(0))
        } else {
            target
        };
        let choice = target.profile.unwrap_or(self.profile);
        check_protocol(choice)?;
        let timeout = self.common.connect_timeout;
        let retirement = Retirement::new();
        let sql = Statements::new(&[("{schema}", &self.schema)]);
        let setup = Arc::new(nodes::Setup {
            nodelay: NoDelay::new(target.tcp_hosts()),
            // Behind a pooler in transaction mode a session setting would land on whichever
            // server connection ran it.
            statement: (!pinned).then(|| sql.session_setup.clone()),
            postgres: AtomicBool::new(false),
        });
        let pool = nodes::pool_options(&retirement, &setup)
            .max_connections(
                self.common
                    .max_connections
                    .unwrap_or(DEFAULT_MAX_CONNECTIONS),
            )
            .acquire_timeout(timeout)
            .acquire_slow_level(log::LevelFilter::Debug)
            // A ping before every checkout would double the round trips of every call; a dead
            // connection surfaces as Error::Unavailable once and is then discarded instead.
            .test_before_acquire(false)
            .connect_lazy_with(target.hosts[0].options.clone());
        // The LISTEN connection has a pool of its own, so it never takes a connection the
        // queue's calls need; it connects only when the first wait starts the listener.
        let listen_target = listen_target.unwrap_or_else(|| target.clone());
        let listen_setup = Arc::new(nodes::Setup {
            nodelay: NoDelay::new(listen_target.tcp_hosts()),
            statement: None,
            postgres: AtomicBool::new(false),
        });
        let listen_pool = nodes::pool_options(&retirement, &listen_setup)
            .max_connections(1)
            .min_connections(0)
            .acquire_timeout(timeout)
            .acquire_slow_level(log::LevelFilter::Debug)
            .connect_lazy_with(listen_target.hosts[0].options.clone());
        let probe_sql = nodes::Sql {
            server_version: sql.server_version.clone(),
            server_role: sql.server_role.clone(),
        };
        // The LISTEN pool gets a route of its own only when something will listen: a poll-only
        // queue neither probes nor follows its hosts.
        let mut routes = vec![target.route(pool.clone(), probe_sql.clone())];
        if listen {
            routes.push(listen_target.route(listen_pool.clone(), probe_sql));
        }
        let nodes = Nodes::new(
            routes,
            retirement,
            timeout,
            "PostgreSQL",
            crate::error::classify,
        );
        // The first contact: the first server of each host list that fits.
        let server = nodes.start().await?;
        setup
            .postgres
            .store(server.kind == ServerKind::Postgres, Ordering::Relaxed);
        let profile = choice.settle(server.kind);
        let native_claim = profile.skip_locked && profile.volatile_in_update;
        let claim = match (self.common.claim_strategy, claim) {
            (Some(ClaimStrategy::SkipLocked), _) if !native_claim => {
                return Err(Error::invalid(
                    "claim_strategy",
                    format!(
                        "skip_locked needs SKIP LOCKED and gen_random_uuid() in an UPDATE, \
                         which the {} profile of this server does not have{}",
                        profile.server,
                        if choice == Profile::Distributed {
                            " (profile distributed)"
                        } else {
                            ""
                        }
                    ),
                ))
            }
            (None, _) if !native_claim => ClaimStrategy::Optimistic,
            (_, claim) => claim,
        };
        if !profile.listen_notify {
            notify = false;
            listen = false;
        }
        tracing::debug!(target: crate::LOG_TARGET, url = %redact_url(&self.url), schema = %self.schema, server_version = %server.version, profile = ?profile, "connected");
        let caps = Capabilities {
            dialect: Dialect::Postgres,
            claim,
            wakeups: if listen {
                Wakeups::ListenNotify
            } else {
                Wakeups::InProcess
            },
            time_precision: Duration::from_micros(1),
            transactions: true,
            server_version: Some(server.version),
            profile,
            limits: self.common.limits.clone(),
        };
        let remote = if notify {
            RemoteWakeups::Notify {
                window: self.notify_window,
            }
        } else {
            RemoteWakeups::Off
        };
        let driver = PgDriver {
            pool,
            listen_pool,
            channel: channel_name(&self.schema),
            schema: self.schema,
            sql,
            listener: Listener::default(),
            listen,
            nodes,
            profile,
            pinned,
            pooler_hint: std::sync::Once::new(),
            setup,
            partitions: target.finished_partitions.or(self.finished_partitions),
            layout: Default::default(),
        };
        Ok(PostgresQueue {
            engine: Engine::new(driver, caps, &self.common, remote),
        })
    }
}

/// Refuses an interval of finished partitions that is not a whole number of days from one to
/// seven; `field` names where it was given (`url` for `finished_partitions=`).
fn check_partitions(field: &str, every: Option<Duration>) -> Result<()> {
    const DAY: u64 = 24 * 3600;
    let Some(every) = every else {
        return Ok(());
    };
    let secs = every.as_secs();
    if every.subsec_nanos() != 0 || secs % DAY != 0 || !(1..=7).contains(&(secs / DAY)) {
        let what = if field == "url" {
            "finished_partitions "
        } else {
            ""
        };
        return Err(Error::invalid(
            field,
            format!("{what}must be a whole number of days from 1 to 7"),
        ));
    }
    Ok(())
}

/// Refuses a profile of an engine that does not speak PostgreSQL's protocol.
fn check_protocol(choice: Profile) -> Result<()> {
    match choice {
        Profile::As(kind)
            if !matches!(
                kind,
                ServerKind::Postgres
                    | ServerKind::CockroachDb
                    | ServerKind::YugabyteDb
                    | ServerKind::Citus
            ) =>
        {
            Err(Error::invalid(
                "profile",
                format!(
                    "{kind} does not speak PostgreSQL's protocol: use postgres, cockroachdb, \
                     yugabytedb, citus, distributed or detect"
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// The connect options every connection of the queue gets.
fn own_options(options: sqlx::postgres::PgConnectOptions) -> sqlx::postgres::PgConnectOptions {
    options
        .application_name("queue")
        .log_slow_statements(log::LevelFilter::Debug, SLOW_STATEMENT)
}
