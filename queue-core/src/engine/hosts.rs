//! Host lists: a URL that names several servers (`scheme://user@h1:p1,h2:p2/db?...`), the role a
//! server must have (`target_session_attrs`), and the task that moves a driver's pools to the
//! server that fits when the one in use stops fitting.
//!
//! Neither sqlx driver takes a host list or checks a server's role, so the drivers do both
//! through this module: [`HostList::parse`] splits the URL into one URL per host, a driver's
//! [`HostProbe`] connects to one host and asks what it is, and [`Nodes`] walks the hosts in
//! order at connect and again, in the background, whenever a statement found its server gone or
//! read-only (a primary demoted in place keeps its sockets and refuses writes on every one of
//! them), retiring every pooled connection made before (see [`Retirement`]).

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use super::{DriverFault, Retirement};
use crate::error::ConnectError;
use crate::validate::redact_url;
use crate::{Error, Result};

/// The URL parameter that names the role a server must have (libpq's name).
pub const SESSION_ATTRS: &str = "target_session_attrs";

/// The log target of the resolver's lines.
const LOG_TARGET: &str = "queue::hosts";

/// Least pause between two walks of the host list, and the most between tries while no host
/// fits.
const MIN_RESOLVE_GAP: Duration = Duration::from_millis(100);
const MAX_RESOLVE_GAP: Duration = Duration::from_secs(5);

/// What role a server must have for the pools to use it (libpq's `target_session_attrs`; the
/// values that would pick a read-only server are refused, since every queue call may write).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionAttrs {
    /// Any server that accepts the connection (libpq's default, and the default of a URL with
    /// one host).
    Any,
    /// A server whose sessions may write: not a standby or replica, not a primary made
    /// read-only in place. The default of a host list.
    ReadWrite,
    /// A server that is not a standby (PostgreSQL: not in recovery).
    Primary,
}

impl SessionAttrs {
    /// Parses the parameter's value; `field` names the setting in errors.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a value that would pick a read-only server, or an unknown one.
    pub fn parse(field: &str, value: &str) -> Result<SessionAttrs> {
        match value {
            "any" => Ok(SessionAttrs::Any),
            "read-write" => Ok(SessionAttrs::ReadWrite),
            "primary" => Ok(SessionAttrs::Primary),
            "read-only" | "standby" | "prefer-standby" => Err(Error::invalid(
                field,
                format!(
                    "{SESSION_ATTRS}={value} would pick a server that cannot take writes, and \
                     every queue call may write; use any, read-write or primary"
                ),
            )),
            other => Err(Error::invalid(
                field,
                format!("{SESSION_ATTRS} must be any, read-write or primary (got {other:?})"),
            )),
        }
    }

    /// Why a server with this role does not fit, or `None` when it does. `standby`: the
    /// server is a standby (PostgreSQL: in recovery; MySQL and MariaDB, which have no such
    /// state, mark replicas `read_only` and report that for both); `read_only`: its sessions
    /// cannot write.
    pub fn refuses(self, standby: bool, read_only: bool) -> Option<&'static str> {
        match self {
            SessionAttrs::Any => None,
            SessionAttrs::ReadWrite | SessionAttrs::Primary if standby && read_only => {
                Some("is a standby or read-only")
            }
            SessionAttrs::ReadWrite | SessionAttrs::Primary if standby => Some("is a standby"),
            SessionAttrs::ReadWrite if read_only => Some("is read-only"),
            _ => None,
        }
    }

    fn wanted(self) -> &'static str {
        match self {
            SessionAttrs::Any => "accepts connections",
            SessionAttrs::ReadWrite => "is read-write",
            SessionAttrs::Primary => "is a primary",
        }
    }
}

/// A URL taken apart into one URL per host.
#[derive(Clone, Debug)]
pub struct HostList {
    /// One URL per host, in the URL's order, each with the same scheme, user, password,
    /// database and the parameters the driver's own parser reads.
    pub urls: Vec<String>,
    /// The role the server must have: the parameter's value, otherwise [`SessionAttrs::Any`]
    /// for one host and [`SessionAttrs::ReadWrite`] for a list.
    pub attrs: SessionAttrs,
    /// The parameters named in `own` that the URL has, as `(name, value)`, taken out of
    /// `urls` (the driver's parser would reject them or ignore them with a warning).
    pub params: Vec<(String, String)>,
}

impl HostList {
    /// Parses `scheme://user:password@host1:port1,host2:port2/database?params`. `schemes` are
    /// the accepted schemes (the first is named in errors first), `own` the parameters the
    /// driver reads itself; `target_session_attrs` is always read here. `field` names the
    /// setting in errors (`url`, `listen_url`). The URL is never echoed unredacted.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for another scheme, an empty host in a list, or a bad
    /// `target_session_attrs`.
    pub fn parse(field: &str, url: &str, schemes: &[&str], own: &[&str]) -> Result<HostList> {
        let wrong_scheme = || {
            let names: Vec<String> = schemes.iter().map(|s| format!("{s}://")).collect();
            Error::invalid(
                field,
                format!(
                    "must start with {} (got {})",
                    names.join(" or "),
                    redact_url(url)
                ),
            )
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(wrong_scheme)?;
        if !schemes.contains(&scheme) {
            return Err(wrong_scheme());
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
        let mut params = Vec::new();
        let mut kept = Vec::new();
        for pair in query
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if key == SESSION_ATTRS || own.contains(&key) {
                let value = percent_decoded(value).ok_or_else(|| {
                    Error::invalid(
                        field,
                        format!("parameter {key} is not validly percent-encoded"),
                    )
                })?;
                if key == SESSION_ATTRS {
                    attrs = Some(SessionAttrs::parse(field, &value)?);
                } else {
                    params.push((key.to_owned(), value));
                }
            } else {
                kept.push(pair);
            }
        }
        let query = if kept.is_empty() {
            String::new()
        } else {
            format!("?{}", kept.join("&"))
        };

        let mut urls = Vec::new();
        for host in hostlist.split(',') {
            if host.is_empty() && hostlist.contains(',') {
                return Err(Error::invalid(
                    field,
                    format!("has an empty host in its host list: {}", redact_url(url)),
                ));
            }
            urls.push(format!("{scheme}://{userinfo}{host}{path}{query}"));
        }
        // A host list without the parameter asks for a read-write server, unlike libpq's
        // `any`: with `any`, a former primary that came back as a standby first in the list
        // would be taken again at every walk, and every write would fail.
        let attrs = attrs.unwrap_or(if urls.len() > 1 {
            SessionAttrs::ReadWrite
        } else {
            SessionAttrs::Any
        });
        Ok(HostList {
            urls,
            attrs,
            params,
        })
    }

    /// The value of the parameter `name` (one of `own`), if the URL has it.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A URL query value with its `%XX` escapes (and `+` as a space) decoded; `None` when an
/// escape is cut short, not hexadecimal, or the result is not UTF-8.
fn percent_decoded(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// A background task of a queue value: started at most once, aborted when the value (the last
/// clone of the queue) is dropped.
#[derive(Debug, Default)]
pub struct Background(Mutex<Option<JoinHandle<()>>>);

impl Background {
    /// Starts the task with `spawn` unless it runs already (`spawn` may decline with `None`,
    /// and is then asked again next time).
    pub fn start_once(&self, spawn: impl FnOnce() -> Option<JoinHandle<()>>) {
        let mut task = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if task.is_none() {
            *task = spawn();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(task) = self.0.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }
}

/// What a driver does with one pool's hosts: connect to one and ask what it is, and point the
/// pool at one.
#[async_trait]
pub trait HostProbe: Send + Sync + 'static {
    /// What a probe learns of a server (its version, its engine).
    type Server: Send + 'static;
    /// The driver's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Connects to host `i` (directly, not through the pool), reads what the server is, and,
    /// unless `attrs` is [`SessionAttrs::Any`], its role: `Ok(Ok(server))` when it fits,
    /// `Ok(Err(why))` when it answers with the wrong role (see [`SessionAttrs::refuses`]).
    async fn probe(
        &self,
        i: usize,
        attrs: SessionAttrs,
    ) -> std::result::Result<std::result::Result<Self::Server, &'static str>, Self::Error>;

    /// Points the pool at host `i`: new connections go there.
    fn point_at(&self, i: usize);
}

/// A pool, its hosts (by label, `host:port`), the role they must have, and the host in use.
#[derive(Debug)]
pub struct Route<P> {
    labels: Vec<String>,
    attrs: SessionAttrs,
    current: AtomicUsize,
    probe: P,
}

impl<P: HostProbe> Route<P> {
    /// A route over `labels` (one per host, in order, as `probe` numbers them); the pool
    /// starts on the first.
    pub fn new(labels: Vec<String>, attrs: SessionAttrs, probe: P) -> Route<P> {
        Route {
            labels,
            attrs,
            current: AtomicUsize::new(0),
            probe,
        }
    }

    /// Walks the hosts in order and returns the first that accepts a connection and has the
    /// role asked for, with what it is; otherwise what each host answered.
    async fn find(
        &self,
        timeout: Duration,
    ) -> std::result::Result<(usize, P::Server), Vec<Miss<P::Error>>> {
        let mut misses = Vec::new();
        for (i, label) in self.labels.iter().enumerate() {
            let why = match tokio::time::timeout(timeout, self.probe.probe(i, self.attrs)).await {
                Ok(Ok(Ok(server))) => return Ok((i, server)),
                Ok(Ok(Err(role))) => Why::Role(role),
                Ok(Err(e)) => Why::Failed(e),
                Err(_) => Why::Silent(timeout),
            };
            misses.push(Miss {
                host: label.clone(),
                why,
            });
        }
        Err(misses)
    }

    /// Points the pool at host `i`; whether that is a change.
    fn point_at(&self, i: usize) -> bool {
        let before = self.current.swap(i, Ordering::Relaxed);
        if before != i {
            self.probe.point_at(i);
        }
        before != i
    }
}

/// A host that did not fit, and why.
#[derive(Debug)]
struct Miss<E> {
    host: String,
    why: Why<E>,
}

/// Why a host did not fit.
#[derive(Debug)]
enum Why<E> {
    /// It answered, with the wrong role (a standby, read-only).
    Role(&'static str),
    /// Connecting or asking failed.
    Failed(E),
    /// No answer within the connect timeout.
    Silent(Duration),
}

impl<E: fmt::Display> fmt::Display for Miss<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.why {
            Why::Role(role) => write!(f, "{} {role}", self.host),
            Why::Failed(e) => write!(f, "{}: {e}", self.host),
            Why::Silent(t) => write!(f, "{}: no answer within {t:?}", self.host),
        }
    }
}

/// Every host and why it did not fit, for messages.
fn describe<E: fmt::Display>(misses: &[Miss<E>], attrs: SessionAttrs) -> String {
    if let [one] = misses {
        return match &one.why {
            Why::Role(role) => format!("the server {role}"),
            Why::Failed(e) => e.to_string(),
            Why::Silent(t) => format!("no answer within {t:?}"),
        };
    }
    let each: Vec<String> = misses.iter().map(ToString::to_string).collect();
    format!(
        "no server of the URL {}: {}",
        attrs.wanted(),
        each.join("; ")
    )
}

/// The resolver of a queue value: finds a fitting server for each of its pools at connect,
/// and walks the host lists again, in a task of its own, whenever a statement found its server
/// unavailable or read-only. One log line when an outage starts and one when it ends, not one
/// per attempt.
pub struct Nodes<P: HostProbe> {
    inner: Arc<Inner<P>>,
    task: Background,
}

struct Inner<P: HostProbe> {
    routes: Vec<Route<P>>,
    retirement: Arc<Retirement>,
    kick: Notify,
    /// Bumped at every retirement, so long-lived connections (LISTEN) leave too.
    moved: watch::Sender<u64>,
    timeout: Duration,
    /// The server's name in messages (`PostgreSQL`, `MySQL/MariaDB`).
    what: &'static str,
    classify: fn(&P::Error) -> DriverFault,
}

impl<P: HostProbe> fmt::Debug for Nodes<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hosts: Vec<&[String]> = self
            .inner
            .routes
            .iter()
            .map(|r| r.labels.as_slice())
            .collect();
        f.debug_struct("Nodes").field("hosts", &hosts).finish()
    }
}

impl<P: HostProbe> Nodes<P> {
    /// The resolver of `routes` (the first is the queries' pool). `what` names the server in
    /// messages (and in the log lines of target `queue::hosts`), `classify` tells an
    /// unreachable server from a refusal (a wrong password is reported as itself).
    pub fn new(
        routes: Vec<Route<P>>,
        retirement: Arc<Retirement>,
        timeout: Duration,
        what: &'static str,
        classify: fn(&P::Error) -> DriverFault,
    ) -> Nodes<P> {
        Nodes {
            inner: Arc::new(Inner {
                routes,
                retirement,
                kick: Notify::new(),
                moved: watch::channel(0).0,
                timeout,
                what,
                classify,
            }),
            task: Background::default(),
        }
    }

    /// Finds a fitting server for every route, points each pool at it, and returns what the
    /// first route's (the queries') server is.
    ///
    /// # Errors
    /// [`Error::Unavailable`] naming each host and why it did not fit; a single host that
    /// answered with an error that is not about availability (a wrong password, a missing
    /// database) keeps that error.
    pub async fn start(&self) -> Result<P::Server> {
        let mut first = None;
        for route in &self.inner.routes {
            let (i, server) = route
                .find(self.inner.timeout)
                .await
                .map_err(|misses| self.inner.no_host(misses, route.attrs))?;
            route.point_at(i);
            if first.is_none() {
                first = Some(server);
            }
        }
        first.ok_or_else(|| Error::invalid("url", "names no host"))
    }

    /// A receiver that changes whenever connections were retired or a pool moved.
    pub fn moved(&self) -> watch::Receiver<u64> {
        self.inner.moved.subscribe()
    }

    /// A statement found its server unavailable: look for the right server again (when there
    /// is a choice), and, when `wrong_node` (the server answers but is read-only or shutting
    /// down), retire every pooled connection so none keeps talking to it.
    pub fn unavailable(&self, wrong_node: bool) {
        if wrong_node {
            self.inner.retirement.retire();
            self.inner.moved.send_modify(|n| *n += 1);
        }
        if self.inner.routes.iter().any(|r| r.labels.len() > 1) {
            // Outside a Tokio runtime there is nothing to run it on; the next outage asks again.
            self.task.start_once(|| {
                let handle = tokio::runtime::Handle::try_current().ok()?;
                Some(handle.spawn(resolve(self.inner.clone())))
            });
            self.inner.kick.notify_one();
        }
    }
}

impl<P: HostProbe> Inner<P> {
    fn no_host(&self, mut misses: Vec<Miss<P::Error>>, attrs: SessionAttrs) -> Error {
        let addresses: Vec<&str> = misses.iter().map(|m| m.host.as_str()).collect();
        let address = addresses.join(",");
        if let [Miss {
            why: Why::Failed(e),
            ..
        }] = misses.as_slice()
        {
            let fault = (self.classify)(e);
            if fault != DriverFault::Unavailable {
                if let Some(Miss {
                    why: Why::Failed(e),
                    ..
                }) = misses.pop()
                {
                    return fault.error(e);
                }
            }
        }
        Error::unavailable(ConnectError::new(
            self.what,
            address,
            describe(&misses, attrs),
        ))
    }
}

/// The resolver task (see [`Nodes`]).
async fn resolve<P: HostProbe>(inner: Arc<Inner<P>>) {
    let server_kind = inner.what;
    let mut outage: HashSet<usize> = HashSet::new();
    loop {
        inner.kick.notified().await;
        let mut gap = MIN_RESOLVE_GAP;
        loop {
            let mut missing = false;
            for (r, route) in inner.routes.iter().enumerate() {
                if route.labels.len() < 2 {
                    continue;
                }
                match route.find(inner.timeout).await {
                    Ok((i, _)) => {
                        if route.point_at(i) {
                            inner.retirement.retire();
                            inner.moved.send_modify(|n| *n += 1);
                            tracing::warn!(target: LOG_TARGET, driver = server_kind, server = %route.labels[i], "moved to another server of the URL");
                        }
                        if outage.remove(&r) {
                            tracing::info!(target: LOG_TARGET, driver = server_kind, server = %route.labels[i], "a server of the URL fits again");
                        }
                    }
                    Err(misses) => {
                        missing = true;
                        if outage.insert(r) {
                            tracing::warn!(target: LOG_TARGET, driver = server_kind, reason = %describe(&misses, route.attrs), "no server of the URL fits; trying again until one does");
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

    const PG: &[&str] = &["postgres", "postgresql"];

    #[test]
    fn one_host_urls_pass_through() {
        let l =
            HostList::parse("url", "postgres://u:p@db:6543/app?sslmode=disable", PG, &[]).unwrap();
        assert_eq!(l.urls, ["postgres://u:p@db:6543/app?sslmode=disable"]);
        assert_eq!(l.attrs, SessionAttrs::Any);
        assert!(l.params.is_empty());
    }

    #[test]
    fn host_lists_keep_their_order_and_share_the_rest() {
        let l = HostList::parse(
            "url",
            "mysql://u:p%40ss@h1:3306,h2:3307,[::1]:3308/db?ssl-mode=disabled&profile=tidb",
            &["mysql", "mariadb"],
            &["profile"],
        )
        .unwrap();
        assert_eq!(
            l.urls,
            [
                "mysql://u:p%40ss@h1:3306/db?ssl-mode=disabled",
                "mysql://u:p%40ss@h2:3307/db?ssl-mode=disabled",
                "mysql://u:p%40ss@[::1]:3308/db?ssl-mode=disabled",
            ]
        );
        assert_eq!(
            l.attrs,
            SessionAttrs::ReadWrite,
            "a list asks for read-write"
        );
        assert_eq!(l.param("profile"), Some("tidb"));
        assert_eq!(l.param("wakeups"), None);
        let l = HostList::parse(
            "url",
            "mysql://h1,h2/db?target_session_attrs=any",
            &["mysql"],
            &[],
        )
        .unwrap();
        assert_eq!(l.attrs, SessionAttrs::Any);
    }

    #[test]
    fn bad_urls_are_named_without_their_password() {
        let e = HostList::parse(
            "url",
            "postgres://u:hunter2@h1,h2/db?target_session_attrs=readwrite",
            PG,
            &[],
        )
        .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput { field, rule } if field == "url" && rule.contains("readwrite")),
            "{e}"
        );
        let e = HostList::parse(
            "listen_url",
            "postgres://h/db?target_session_attrs=standby",
            PG,
            &[],
        )
        .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput { field, rule } if field == "listen_url" && rule.contains("cannot take writes")),
            "{e}"
        );
        let e = HostList::parse("url", "mysql://u:hunter2@h/db", PG, &[]).unwrap_err();
        let shown = e.to_string();
        assert!(
            shown.contains("postgres:// or postgresql://") && !shown.contains("hunter2"),
            "{shown}"
        );
        let e = HostList::parse("url", "postgres://u:hunter2@h1,,h2/db", PG, &[]).unwrap_err();
        let shown = e.to_string();
        assert!(
            shown.contains("empty host") && !shown.contains("hunter2"),
            "{shown}"
        );
    }

    #[test]
    fn parameter_values_are_percent_decoded() {
        let l = HostList::parse(
            "url",
            "postgres://h1,h2/db?target_session_attrs=read%2Dwrite&profile=distri%62uted",
            PG,
            &["profile"],
        )
        .unwrap();
        assert_eq!(l.attrs, SessionAttrs::ReadWrite);
        assert_eq!(l.param("profile"), Some("distributed"));
        assert_eq!(percent_decoded("a+b%20c").as_deref(), Some("a b c"));
        for bad in ["%", "%2", "%zz", "%ff"] {
            assert_eq!(percent_decoded(bad), None, "{bad}");
        }
        let e =
            HostList::parse("url", "postgres://h/db?profile=%zz", PG, &["profile"]).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput { field, rule } if field == "url" && rule.contains("profile")),
            "{e}"
        );
    }

    #[test]
    fn roles_that_do_not_fit() {
        use SessionAttrs::*;
        assert_eq!(Any.refuses(true, true), None);
        assert_eq!(
            ReadWrite.refuses(true, true),
            Some("is a standby or read-only")
        );
        assert_eq!(ReadWrite.refuses(true, false), Some("is a standby"));
        assert!(ReadWrite
            .refuses(false, true)
            .unwrap()
            .contains("read-only"));
        assert_eq!(ReadWrite.refuses(false, false), None);
        assert!(Primary.refuses(true, true).unwrap().contains("standby"));
        assert_eq!(Primary.refuses(false, true), None);
    }
}
