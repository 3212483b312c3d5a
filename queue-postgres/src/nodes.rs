//! Which server the pools talk to: the host list of the URL (`postgres://u@h1:5432,h2:5433/db`),
//! the role a server must have (`target_session_attrs`), and what happens when the server stops
//! being the primary.
//!
//! sqlx connects a pool to one host and ignores `target_session_attrs`, so this module splits
//! the URL ([`HostList`]), and its [`PgHosts`] connects to one host and asks it what it is
//! (`server_version`) and what role it has (`server_role`: in recovery? read-only?). The
//! resolver of `queue_core::engine::hosts` walks the list with it and points the pool at the
//! first host that fits ([`sqlx::Pool::set_connect_options`]). When a statement finds the
//! server gone or read-only (a primary demoted in place keeps its sockets and answers SQLSTATE
//! 25006 on every one of them), the driver *retires* every connection made before that moment
//! (the pool's `before_acquire` closes them on their next checkout, so no pooled connection
//! keeps answering 25006 until a restart) and asks the resolver to walk the host list again.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use queue_core::engine::hosts::{HostList, HostProbe, SessionAttrs};
use queue_core::engine::Retirement;

use crate::nodelay::NoDelay;
use queue_core::{Error, Profile, Result, ServerKind};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use sqlx::{Connection, PgPool, Row, SqlStr};

/// Parameters of the URL that this crate reads itself (they are removed before sqlx parses the
/// rest, which would ignore them with a warning).
const WAKEUPS: &str = "wakeups";
const PROFILE: &str = "profile";
const POOLER: &str = "pooler";
const PARTITIONS: &str = "finished_partitions";

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
    /// `finished_partitions=24h` (or `=1d`): the interval of finished partitions a migration
    /// turns on (checked by the builder).
    pub(crate) finished_partitions: Option<Duration>,
}

impl Target {
    /// The same hosts, each with `f` applied to its options.
    pub(crate) fn with(mut self, f: impl Fn(PgConnectOptions) -> PgConnectOptions) -> Target {
        for host in &mut self.hosts {
            host.options = f(host.options.clone());
        }
        self
    }

    /// The hosts reached over TCP, with their ports (a host given as a Unix socket is not one).
    pub(crate) fn tcp_hosts(&self) -> Vec<(String, u16)> {
        let mut hosts: Vec<(String, u16)> = self
            .hosts
            .iter()
            .filter(|h| h.options.get_socket().is_none())
            .map(|h| (h.options.get_host().to_owned(), h.options.get_port()))
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts
    }

    /// The resolver's route over these hosts for `pool`.
    pub(crate) fn route(&self, pool: PgPool, sql: Sql) -> Route {
        Route::new(
            self.hosts.iter().map(|h| h.label.clone()).collect(),
            self.attrs,
            PgHosts {
                options: self.hosts.iter().map(|h| h.options.clone()).collect(),
                pool,
                sql,
            },
        )
    }
}

/// The resolver of the PostgreSQL driver's pools.
pub(crate) type Nodes = queue_core::engine::hosts::Nodes<PgHosts>;
/// One pool's route.
pub(crate) type Route = queue_core::engine::hosts::Route<PgHosts>;

/// Parses `postgres://user:password@host1:port1,host2:port2/database?params`. Every host gets
/// the same user, database and parameters; `target_session_attrs`, `wakeups`, `profile`,
/// `pooler` and `finished_partitions` are read here. `field` names the setting in errors (`url`, `listen_url`).
pub(crate) fn parse(field: &str, url: &str) -> Result<Target> {
    let list = HostList::parse(
        field,
        url,
        &["postgres", "postgresql"],
        &[WAKEUPS, PROFILE, POOLER, PARTITIONS],
    )?;
    let finished_partitions = list
        .param(PARTITIONS)
        .map(|v| {
            let (number, unit) = match v.strip_suffix('d') {
                Some(days) => (days, 24),
                None => (v.strip_suffix('h').unwrap_or(v), 1),
            };
            number
                .parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(unit * 3600))
                .map(Duration::from_secs)
                .ok_or_else(|| {
                    Error::invalid(
                        field,
                        format!(
                            "{PARTITIONS} must be a number of hours or days, such as 24h or 1d \
                             (got {v:?})"
                        ),
                    )
                })
        })
        .transpose()?;
    let wakeups = match list.param(WAKEUPS) {
        None => None,
        Some("notify") => Some(UrlWakeups::Notify),
        Some("poll") => Some(UrlWakeups::Poll),
        Some(other) => {
            return Err(Error::invalid(
                field,
                format!("{WAKEUPS} must be notify or poll (got {other:?})"),
            ))
        }
    };
    let profile = list
        .param(PROFILE)
        .map(|v| Profile::from_url(field, v))
        .transpose()?;
    let transaction_pooler = match list.param(POOLER) {
        None => None,
        Some("transaction") => Some(true),
        Some("none" | "session") => Some(false),
        Some(other) => {
            return Err(Error::invalid(
                field,
                format!("{POOLER} must be transaction, session or none (got {other:?})"),
            ))
        }
    };
    let mut hosts = Vec::new();
    for one in &list.urls {
        // The URL is not echoed: one that does not parse may hold its password anywhere.
        let options = PgConnectOptions::from_str(one).map_err(|_| {
            Error::invalid(
                field,
                "is not a valid PostgreSQL URL (check the host list, the ports, and that \
                 special characters of the password are percent-encoded)",
            )
        })?;
        let label = format!("{}:{}", options.get_host(), options.get_port());
        hosts.push(Host { label, options });
    }
    Ok(Target {
        hosts,
        attrs: list.attrs,
        wakeups,
        profile,
        transaction_pooler,
        finished_partitions,
    })
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

/// The hosts of one pool, as the resolver probes them.
#[derive(Debug)]
pub(crate) struct PgHosts {
    options: Vec<PgConnectOptions>,
    pool: PgPool,
    sql: Sql,
}

#[async_trait]
impl HostProbe for PgHosts {
    type Server = Server;
    type Error = sqlx::Error;

    async fn probe(
        &self,
        i: usize,
        attrs: SessionAttrs,
    ) -> std::result::Result<std::result::Result<Server, &'static str>, sqlx::Error> {
        let sql = &self.sql;
        let mut conn = PgConnection::connect_with(&self.options[i]).await?;
        // In a transaction, so that a pooler in transaction mode keeps both statements on the
        // one server they ask about.
        let mut tx = conn.begin().await?;
        // Unnamed statements: the connection is closed right after, and a named one would
        // stay on a pooler's server connection for the next client to trip over.
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

    fn point_at(&self, i: usize) {
        self.pool.set_connect_options(self.options[i].clone());
    }
}

/// What each new connection of a pool gets: Nagle's algorithm off ([`NoDelay`]), then, once
/// the server is known to be PostgreSQL itself and no transaction pooler is in the way,
/// `session_setup` (one generic plan per prepared statement).
#[derive(Debug)]
pub(crate) struct Setup {
    pub(crate) nodelay: NoDelay,
    pub(crate) statement: Option<SqlStr>,
    /// Set once the first contact found a PostgreSQL server.
    pub(crate) postgres: std::sync::atomic::AtomicBool,
}

/// Pool options with the hook that closes retired connections at checkout, and the one that
/// prepares each new connection ([`Setup`]).
pub(crate) fn pool_options(retirement: &Arc<Retirement>, setup: &Arc<Setup>) -> PgPoolOptions {
    let retirement = retirement.clone();
    let setup = setup.clone();
    PgPoolOptions::new()
        .before_acquire(move |_conn, meta| {
            let keep = !retirement.is_retired(meta.age);
            Box::pin(async move { Ok(keep) })
        })
        .after_connect(move |conn, _meta| {
            let setup = setup.clone();
            Box::pin(async move {
                setup.nodelay.after_connect().await;
                let postgres = setup.postgres.load(std::sync::atomic::Ordering::Relaxed);
                if let (Some(statement), true) = (&setup.statement, postgres) {
                    match sqlx::query(statement.clone())
                        .persistent(false)
                        .execute(conn)
                        .await
                    {
                        Ok(_) => {}
                        // Refused by the server: the connection is as it was, and usable.
                        Err(sqlx::Error::Database(error)) => {
                            tracing::debug!(target: crate::LOG_TARGET, %error, "session setup refused");
                        }
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            })
        })
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
    fn the_finished_partitions_parameter_is_read_and_checked() {
        for (value, hours) in [("24h", 24), ("1d", 24), ("6", 6), ("7d", 168)] {
            let t = parse(
                "url",
                &format!("postgres://h/db?finished_partitions={value}"),
            )
            .unwrap();
            assert_eq!(
                t.finished_partitions,
                Some(Duration::from_secs(hours * 3600))
            );
        }
        assert_eq!(
            parse("url", "postgres://h/db").unwrap().finished_partitions,
            None
        );
        let e = parse("url", "postgres://h/db?finished_partitions=daily").unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput { field, rule } if field == "url" && rule.contains("24h or 1d")),
            "{e:?}"
        );
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
}
