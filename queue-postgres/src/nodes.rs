//! Which server the pools talk to: the host list of the URL (`postgres://u@h1:5432,h2:5433/db`),
//! the role a server must have (`target_session_attrs`), and what happens when the server stops
//! being the primary.
//!
//! sqlx connects a pool to one host and ignores `target_session_attrs`, so this module does
//! both: it walks the host list in order, checks each server's role with `server_role`, and
//! points the pool at the first one that fits ([`sqlx::Pool::set_connect_options`]). When a
//! statement finds the server gone or read-only (a primary demoted in place keeps its sockets
//! and answers SQLSTATE 25006 on every one of them), the driver *retires* every connection made
//! before that moment (the pool's `before_acquire` closes them on their next checkout, so no
//! pooled connection keeps answering 25006 until a restart) and asks the resolver task to walk
//! the host list again.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use queue_core::engine::Retirement;
use queue_core::validate::redact_url;
use queue_core::{Error, Profile, Result, ServerKind};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use sqlx::{Connection, PgPool, Row, SqlStr};
use tokio::sync::{watch, Notify};

use crate::listen::Background;
use crate::LOG_TARGET;

/// Parameters of the URL that this crate reads itself (they are removed before sqlx parses the
/// rest, which would ignore them with a warning).
const SESSION_ATTRS: &str = "target_session_attrs";
const WAKEUPS: &str = "wakeups";
const PROFILE: &str = "profile";
const POOLER: &str = "pooler";

/// Least pause between two walks of the host list, and the most between tries while no host
/// fits.
const MIN_RESOLVE_GAP: Duration = Duration::from_millis(100);
const MAX_RESOLVE_GAP: Duration = Duration::from_secs(5);

/// What role a server must have for the pool to use it (libpq's `target_session_attrs`; the
/// values that would pick a read-only server are refused, since every queue call may write).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SessionAttrs {
    /// Any server that accepts the connection (libpq's default).
    Any,
    /// A server whose sessions are read-write (`transaction_read_only` is off): not a standby,
    /// not a primary demoted in place with `default_transaction_read_only = on`.
    ReadWrite,
    /// A server that is not in recovery (`pg_is_in_recovery()` is false).
    Primary,
}

impl SessionAttrs {
    fn parse(value: &str) -> Result<SessionAttrs> {
        match value {
            "any" => Ok(SessionAttrs::Any),
            "read-write" => Ok(SessionAttrs::ReadWrite),
            "primary" => Ok(SessionAttrs::Primary),
            "read-only" | "standby" | "prefer-standby" => Err(Error::invalid(
                "url",
                format!(
                    "{SESSION_ATTRS}={value} would pick a server that cannot take writes, and \
                     every queue call may write; use any, read-write or primary"
                ),
            )),
            other => Err(Error::invalid(
                "url",
                format!("{SESSION_ATTRS} must be any, read-write or primary (got {other:?})"),
            )),
        }
    }

    /// Why a server with this role does not fit, or `None` when it does.
    fn refuses(self, in_recovery: bool, read_only: bool) -> Option<&'static str> {
        match self {
            SessionAttrs::Any => None,
            SessionAttrs::ReadWrite if in_recovery => Some("is a standby (in recovery)"),
            SessionAttrs::ReadWrite if read_only => {
                Some("is read-only (transaction_read_only = on)")
            }
            SessionAttrs::Primary if in_recovery => Some("is a standby (in recovery)"),
            _ => None,
        }
    }
}

/// How wake-ups cross processes, when the URL says (`wakeups=notify` or `wakeups=poll`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UrlWakeups {
    /// NOTIFY in pushes, LISTEN while waiting (the default).
    Notify,
    /// Neither: waiting workers find other processes' jobs at their next poll (for poolers in
    /// transaction mode and engines without LISTEN/NOTIFY).
    Poll,
}

/// One host of the URL.
#[derive(Clone)]
pub(crate) struct Host {
    /// `host:port`, for messages.
    pub(crate) label: String,
    pub(crate) options: PgConnectOptions,
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// A URL taken apart: its hosts, in order, and the parameters this crate reads.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) hosts: Vec<Host>,
    pub(crate) attrs: SessionAttrs,
    pub(crate) wakeups: Option<UrlWakeups>,
    /// `profile=...`: the engine profile to use instead of the detected one.
    pub(crate) profile: Option<Profile>,
    /// `pooler=transaction` (true) or `pooler=none` (false): whether a pooler in transaction
    /// mode sits between the queue and the server.
    pub(crate) transaction_pooler: Option<bool>,
}

impl Target {
    /// The same hosts, each with `f` applied to its options.
    pub(crate) fn with(mut self, f: impl Fn(PgConnectOptions) -> PgConnectOptions) -> Target {
        for host in &mut self.hosts {
            host.options = f(host.options.clone());
        }
        self
    }
}

/// Parses `postgres://user:password@host1:port1,host2:port2/database?params`. Every host gets
/// the same user, database and parameters; `target_session_attrs` and `wakeups` are read here.
/// `field` names the setting in errors (`url`, `listen_url`).
pub(crate) fn parse(field: &str, url: &str) -> Result<Target> {
    // The URL is not echoed: one that does not parse may hold its password anywhere.
    let bad = || {
        Error::invalid(
            field,
            "is not a valid PostgreSQL URL (check the host list, the ports, and that special \
             characters of the password are percent-encoded)",
        )
    };
    let (scheme, rest) = url.split_once("://").ok_or_else(|| {
        Error::invalid(
            field,
            format!(
                "must start with postgres:// or postgresql:// (got {})",
                redact_url(url)
            ),
        )
    })?;
    if !matches!(scheme, "postgres" | "postgresql") {
        return Err(Error::invalid(
            field,
            format!(
                "must start with postgres:// or postgresql:// (got {})",
                redact_url(url)
            ),
        ));
    }
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.find('/') {
        Some(i) => before_query.split_at(i),
        None => (before_query, ""),
    };
    let (userinfo, hostlist) = match authority.rfind('@') {
        Some(i) => (&authority[..=i], &authority[i + 1..]),
        None => ("", authority),
    };

    let mut attrs = None;
    let mut wakeups = None;
    let mut profile = None;
    let mut transaction_pooler = None;
    let mut kept = Vec::new();
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            SESSION_ATTRS => {
                attrs = Some(SessionAttrs::parse(value).map_err(|e| in_field(e, field))?)
            }
            WAKEUPS => {
                wakeups = Some(match value {
                    "notify" => UrlWakeups::Notify,
                    "poll" => UrlWakeups::Poll,
                    other => {
                        return Err(Error::invalid(
                            field,
                            format!("{WAKEUPS} must be notify or poll (got {other:?})"),
                        ))
                    }
                })
            }
            PROFILE => {
                profile = Some(value.parse::<Profile>().map_err(|e| match e {
                    Error::InvalidInput { rule, .. } => {
                        Error::invalid(field, format!("parameter {PROFILE} {rule}"))
                    }
                    other => other,
                })?)
            }
            POOLER => {
                transaction_pooler = Some(match value {
                    "transaction" => true,
                    "none" | "session" => false,
                    other => {
                        return Err(Error::invalid(
                            field,
                            format!(
                                "{POOLER} must be transaction, session or none (got {other:?})"
                            ),
                        ))
                    }
                })
            }
            _ => kept.push(pair),
        }
    }
    let query = if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    };

    let mut hosts = Vec::new();
    for host in hostlist.split(',') {
        if host.is_empty() && hostlist.contains(',') {
            return Err(Error::invalid(
                field,
                format!("has an empty host in its host list: {}", redact_url(url)),
            ));
        }
        let one = format!("{scheme}://{userinfo}{host}{path}{query}");
        let options = PgConnectOptions::from_str(&one).map_err(|_| bad())?;
        let label = format!("{}:{}", options.get_host(), options.get_port());
        hosts.push(Host { label, options });
    }
    // A host list without the parameter asks for a read-write server, unlike libpq's `any`:
    // with `any`, a former primary that came back as a standby first in the list would be taken
    // again at every walk, and every write would fail.
    let attrs = attrs.unwrap_or(if hosts.len() > 1 {
        SessionAttrs::ReadWrite
    } else {
        SessionAttrs::Any
    });
    Ok(Target {
        hosts,
        attrs,
        wakeups,
        profile,
        transaction_pooler,
    })
}

fn in_field(e: Error, field: &str) -> Error {
    match e {
        Error::InvalidInput { rule, .. } => Error::invalid(field, rule),
        other => other,
    }
}

/// Asks a server what role it has: `(in_recovery, read_only)`.
async fn role(
    conn: &mut PgConnection,
    sql: &SqlStr,
) -> std::result::Result<(bool, bool), sqlx::Error> {
    let row = sqlx::query(sql.clone())
        .persistent(false)
        .fetch_one(conn)
        .await?;
    Ok((row.try_get("in_recovery")?, row.try_get("read_only")?))
}

/// The connections of one pool: its hosts, the role they must have, and the host in use.
#[derive(Debug)]
pub(crate) struct Route {
    pub(crate) target: Target,
    pub(crate) pool: PgPool,
    current: AtomicUsize,
}

impl Route {
    /// Walks the hosts in order and returns the first that accepts a connection and has the
    /// role asked for, with its server version; otherwise what each host answered.
    async fn find(
        &self,
        sql: &Sql,
        timeout: Duration,
    ) -> std::result::Result<(usize, Server), Vec<Miss>> {
        let mut misses = Vec::new();
        for (i, host) in self.target.hosts.iter().enumerate() {
            let why = match tokio::time::timeout(timeout, probe(host, self.target.attrs, sql)).await
            {
                Ok(Ok(Ok(version))) => return Ok((i, version)),
                Ok(Ok(Err(role))) => Why::Role(role),
                Ok(Err(e)) => Why::Failed(e),
                Err(_) => Why::Silent(timeout),
            };
            misses.push(Miss {
                host: host.label.clone(),
                why,
            });
        }
        Err(misses)
    }

    /// Points the pool at host `i`; whether that is a change.
    fn point_at(&self, i: usize) -> bool {
        let before = self.current.swap(i, Ordering::Relaxed);
        if before != i {
            self.pool
                .set_connect_options(self.target.hosts[i].options.clone());
        }
        before != i
    }
}

/// A host that did not fit, and why.
#[derive(Debug)]
pub(crate) struct Miss {
    pub(crate) host: String,
    pub(crate) why: Why,
}

/// Why a host did not fit.
#[derive(Debug)]
pub(crate) enum Why {
    /// It answered, with the wrong role (a standby, read-only).
    Role(&'static str),
    /// Connecting or asking failed.
    Failed(sqlx::Error),
    /// No answer within the connect timeout.
    Silent(Duration),
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.why {
            Why::Role(role) => write!(f, "{} {role}", self.host),
            Why::Failed(e) => write!(f, "{}: {e}", self.host),
            Why::Silent(t) => write!(f, "{}: no answer within {t:?}", self.host),
        }
    }
}

/// The two statements a probe runs.
#[derive(Clone, Debug)]
pub(crate) struct Sql {
    pub(crate) server_version: SqlStr,
    pub(crate) server_role: SqlStr,
}

/// What a server said about itself.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    /// `server_version`, e.g. `15.20 (Debian 15.20-0+deb12u1)`.
    pub(crate) version: String,
    /// The engine, from `version()` and the installed extensions.
    pub(crate) kind: ServerKind,
}

/// Connects to one host and checks its role: `Ok(Ok(server))` when it fits, `Ok(Err(why))`
/// when it answers but has the wrong role.
async fn probe(
    host: &Host,
    attrs: SessionAttrs,
    sql: &Sql,
) -> std::result::Result<std::result::Result<Server, &'static str>, sqlx::Error> {
    let mut conn = PgConnection::connect_with(&host.options).await?;
    // In a transaction, so that a pooler in transaction mode keeps both statements on the one
    // server they ask about.
    let mut tx = conn.begin().await?;
    // Unnamed statements: the connection is closed right after, and a named one would stay on
    // a pooler's server connection for the next client to trip over.
    let row = sqlx::query(sql.server_version.clone())
        .persistent(false)
        .fetch_one(&mut *tx)
        .await?;
    let banner: String = row.try_get("banner")?;
    let server = Server {
        version: row.try_get("version")?,
        kind: ServerKind::from_postgres_banner(&banner, row.try_get("citus")?),
    };
    let fits = if attrs == SessionAttrs::Any {
        Ok(server)
    } else {
        let (in_recovery, read_only) = role(&mut tx, &sql.server_role).await?;
        attrs
            .refuses(in_recovery, read_only)
            .map_or(Ok(server), Err)
    };
    let _ = tx.rollback().await;
    let _ = conn.close().await;
    Ok(fits)
}

/// The error of a connect that found no fitting host. A single host that answered with an
/// error that is not about availability (a wrong password, a missing database) keeps that
/// error; otherwise it is [`Error::Unavailable`] naming every host and why it did not fit.
pub(crate) fn no_host(mut misses: Vec<Miss>, attrs: SessionAttrs) -> Error {
    let addresses: Vec<&str> = misses.iter().map(|m| m.host.as_str()).collect();
    let address = addresses.join(",");
    if misses.len() == 1 {
        if let Why::Failed(e) = &misses[0].why {
            let fault = crate::error::classify(e);
            if fault != queue_core::engine::DriverFault::Unavailable {
                let Some(Miss {
                    why: Why::Failed(e),
                    ..
                }) = misses.pop()
                else {
                    unreachable!("checked above")
                };
                return fault.error(e);
            }
        }
    }
    Error::unavailable(queue_core::error::ConnectError::new(
        "PostgreSQL",
        address,
        describe(&misses, attrs),
    ))
}

/// Every host and why it did not fit, for messages.
fn describe(misses: &[Miss], attrs: SessionAttrs) -> String {
    let wanted = match attrs {
        SessionAttrs::Any => "accepts connections",
        SessionAttrs::ReadWrite => "is read-write",
        SessionAttrs::Primary => "is a primary",
    };
    if let [one] = misses {
        return match &one.why {
            Why::Role(role) => format!("the server {role}"),
            Why::Failed(e) => e.to_string(),
            Why::Silent(t) => format!("no answer within {t:?}"),
        };
    }
    let each: Vec<String> = misses.iter().map(ToString::to_string).collect();
    format!("no server of the URL {wanted}: {}", each.join("; "))
}

/// Pool options with the hook that closes retired connections at checkout.
pub(crate) fn pool_options(retirement: &Arc<Retirement>) -> PgPoolOptions {
    let retirement = retirement.clone();
    PgPoolOptions::new().before_acquire(move |_conn, meta| {
        let keep = !retirement.is_retired(meta.age);
        Box::pin(async move { Ok(keep) })
    })
}

/// The resolver: one task per queue value that walks the host lists again whenever a
/// statement found its server unavailable or read-only, and moves the pools to the server that
/// fits. One log line when an outage starts and one when it ends, not one per attempt.
#[derive(Debug)]
pub(crate) struct Nodes {
    routes: Arc<Vec<Route>>,
    retirement: Arc<Retirement>,
    kick: Arc<Notify>,
    /// Bumped at every retirement, so the LISTEN task leaves its connection too.
    moved: watch::Sender<u64>,
    task: Background,
    sql: Sql,
    timeout: Duration,
}

impl Nodes {
    pub(crate) fn new(
        routes: Vec<Route>,
        retirement: Arc<Retirement>,
        sql: Sql,
        timeout: Duration,
    ) -> Nodes {
        Nodes {
            routes: Arc::new(routes),
            retirement,
            kick: Arc::new(Notify::new()),
            moved: watch::channel(0).0,
            task: Background::default(),
            sql,
            timeout,
        }
    }

    /// A pool and the hosts it may use; it starts on the first.
    pub(crate) fn route(target: Target, pool: PgPool) -> Route {
        Route {
            target,
            pool,
            current: AtomicUsize::new(0),
        }
    }

    /// Finds a fitting server for every route, points each pool at it, and returns what the
    /// first route's (the queries') server is.
    ///
    /// # Errors
    /// [`Error::Unavailable`] naming each host and why it did not fit (see [`no_host`]).
    pub(crate) async fn start(&self) -> Result<Server> {
        let mut first = None;
        for route in self.routes.iter() {
            let (i, server) = route
                .find(&self.sql, self.timeout)
                .await
                .map_err(|misses| no_host(misses, route.target.attrs))?;
            route.point_at(i);
            first.get_or_insert(server);
        }
        first.ok_or_else(|| Error::invalid("url", "names no host"))
    }

    /// A receiver that changes whenever connections were retired.
    pub(crate) fn moved(&self) -> watch::Receiver<u64> {
        self.moved.subscribe()
    }

    /// A statement found its server unavailable: look for the right server again (when there
    /// is a choice), and, when `wrong_node` (the server answers but is read-only or shutting
    /// down), retire every pooled connection so none keeps talking to it.
    pub(crate) fn unavailable(&self, wrong_node: bool) {
        if wrong_node {
            self.retirement.retire();
            self.moved.send_modify(|n| *n += 1);
        }
        if self.routes.iter().any(|r| r.target.hosts.len() > 1) {
            self.ensure_task();
            self.kick.notify_one();
        }
    }

    fn ensure_task(&self) {
        // Outside a Tokio runtime there is nothing to run it on; the next outage asks again.
        self.task.start_once(|| {
            let handle = tokio::runtime::Handle::try_current().ok()?;
            Some(handle.spawn(resolve(
                self.routes.clone(),
                self.retirement.clone(),
                self.kick.clone(),
                self.moved.clone(),
                self.sql.clone(),
                self.timeout,
            )))
        });
    }
}

/// The resolver task (see [`Nodes`]).
async fn resolve(
    routes: Arc<Vec<Route>>,
    retirement: Arc<Retirement>,
    kick: Arc<Notify>,
    moved: watch::Sender<u64>,
    sql: Sql,
    timeout: Duration,
) {
    let mut outage: HashSet<usize> = HashSet::new();
    loop {
        kick.notified().await;
        let mut gap = MIN_RESOLVE_GAP;
        loop {
            let mut missing = false;
            for (r, route) in routes.iter().enumerate() {
                if route.target.hosts.len() < 2 {
                    continue;
                }
                match route.find(&sql, timeout).await {
                    Ok((i, _)) => {
                        if route.point_at(i) {
                            retirement.retire();
                            moved.send_modify(|n| *n += 1);
                            tracing::warn!(target: LOG_TARGET, server = %route.target.hosts[i].label, "moved to another server of the URL");
                        }
                        if outage.remove(&r) {
                            tracing::info!(target: LOG_TARGET, server = %route.target.hosts[i].label, "a server of the URL fits again");
                        }
                    }
                    Err(misses) => {
                        missing = true;
                        if outage.insert(r) {
                            tracing::warn!(target: LOG_TARGET, reason = %describe(&misses, route.target.attrs), "no server of the URL fits; trying again until one does");
                        }
                    }
                }
            }
            // Kicks that came while walking are answered by this walk.
            tokio::time::sleep(gap).await;
            if !missing {
                break;
            }
            gap = (gap * 2).min(MAX_RESOLVE_GAP);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_urls_pass_through() {
        let t = parse("url", "postgres://u:p@db.example:6543/app?sslmode=disable").unwrap();
        assert_eq!(t.hosts.len(), 1);
        assert_eq!(t.hosts[0].label, "db.example:6543");
        assert_eq!(t.hosts[0].options.get_database(), Some("app"));
        assert_eq!(t.hosts[0].options.get_username(), "u");
        assert_eq!(t.attrs, SessionAttrs::Any);
        assert_eq!(t.wakeups, None);
    }

    #[test]
    fn host_lists_keep_their_order_and_share_the_rest() {
        let t = parse(
            "url",
            "postgresql://u@h1:5432,h2:5433,[::1]:5434/db?target_session_attrs=read-write&application_name=x&wakeups=poll",
        )
        .unwrap();
        let labels: Vec<&str> = t.hosts.iter().map(|h| h.label.as_str()).collect();
        assert_eq!(labels, ["h1:5432", "h2:5433", "[::1]:5434"]);
        for h in &t.hosts {
            assert_eq!(h.options.get_database(), Some("db"));
            assert_eq!(h.options.get_username(), "u");
            assert_eq!(h.options.get_application_name(), Some("x"));
        }
        assert_eq!(t.attrs, SessionAttrs::ReadWrite);
        assert_eq!(t.wakeups, Some(UrlWakeups::Poll));
        let t = parse("url", "postgres://h1,h2/db?target_session_attrs=primary").unwrap();
        assert_eq!(t.hosts[1].label, "h2:5432");
        assert_eq!(t.attrs, SessionAttrs::Primary);
        // A host list asks for a read-write server unless told otherwise; one host, any.
        assert_eq!(
            parse("url", "postgres://h1,h2/db").unwrap().attrs,
            SessionAttrs::ReadWrite
        );
        assert_eq!(
            parse("url", "postgres://h1,h2/db?target_session_attrs=any")
                .unwrap()
                .attrs,
            SessionAttrs::Any
        );
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = parse("url", "postgres://h1,h2/db?target_session_attrs=readwrite").unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput { field, rule } if field == "url" && rule.contains("target_session_attrs") && rule.contains("readwrite")),
            "{e}"
        );
        let e = parse("listen_url", "postgres://h/db?target_session_attrs=standby").unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput { field, rule } if field == "listen_url" && rule.contains("cannot take writes")),
            "{e}"
        );
        let e = parse("url", "postgres://h/db?wakeups=sometimes").unwrap_err();
        assert!(
            e.to_string().contains("wakeups must be notify or poll"),
            "{e}"
        );
        let e = parse("url", "postgres://h1,,h2/db").unwrap_err();
        assert!(e.to_string().contains("empty host"), "{e}");
        let e = parse("url", "mysql://h/db").unwrap_err();
        assert!(e.to_string().contains("must start with postgres://"), "{e}");
        let e = parse("url", "postgres://u:secret@h:notaport/db").unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
    }

    #[test]
    fn the_pooler_parameter_is_read_and_checked() {
        let t = parse(
            "url",
            "postgres://u@h:6432/db?pooler=transaction&sslmode=disable",
        )
        .unwrap();
        assert_eq!(t.transaction_pooler, Some(true));
        assert_eq!(t.hosts[0].label, "h:6432");
        for off in ["none", "session"] {
            let t = parse("url", &format!("postgres://u@h/db?pooler={off}")).unwrap();
            assert_eq!(t.transaction_pooler, Some(false));
        }
        assert_eq!(
            parse("url", "postgres://u@h/db")
                .unwrap()
                .transaction_pooler,
            None
        );
        let e = parse("url", "postgres://h/db?pooler=statement").unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput { field, rule } if field == "url" && rule.contains("pooler") && rule.contains("statement")),
            "{e}"
        );
    }

    #[test]
    fn roles_that_do_not_fit() {
        use SessionAttrs::*;
        assert_eq!(Any.refuses(true, true), None);
        assert!(ReadWrite.refuses(true, true).unwrap().contains("standby"));
        assert!(ReadWrite
            .refuses(false, true)
            .unwrap()
            .contains("read-only"));
        assert_eq!(ReadWrite.refuses(false, false), None);
        assert!(Primary.refuses(true, true).unwrap().contains("standby"));
        assert_eq!(Primary.refuses(false, true), None);
    }
}
