//! Engine profiles: which database engine is behind a dialect's wire protocol, and what it can
//! do, as data. A driver detects the engine from the server's banner at connect and picks its
//! statements by these flags, never by the engine's name.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The database engine behind a connection, detected from its banner at connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerKind {
    /// SQLite (embedded).
    Sqlite,
    /// PostgreSQL.
    Postgres,
    /// CockroachDB (PostgreSQL protocol; `version()` starts with `CockroachDB`).
    CockroachDb,
    /// YugabyteDB YSQL (PostgreSQL protocol; `version()` holds `-YB-`).
    YugabyteDb,
    /// PostgreSQL with the Citus extension.
    Citus,
    /// MySQL.
    MySql,
    /// MariaDB.
    MariaDb,
    /// TiDB (MySQL protocol; the version holds `-TiDB-`).
    TiDb,
    /// Vitess or PlanetScale (MySQL protocol; the version ends in `-vitess`).
    Vitess,
    /// Microsoft SQL Server.
    MsSql,
    /// The in-memory store (`dbqueue-memory`): no server, no SQL.
    Memory,
}

impl ServerKind {
    /// The name used in URLs and messages (`postgres`, `cockroachdb`, `tidb`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Sqlite => "sqlite",
            ServerKind::Postgres => "postgres",
            ServerKind::CockroachDb => "cockroachdb",
            ServerKind::YugabyteDb => "yugabytedb",
            ServerKind::Citus => "citus",
            ServerKind::MySql => "mysql",
            ServerKind::MariaDb => "mariadb",
            ServerKind::TiDb => "tidb",
            ServerKind::Vitess => "vitess",
            ServerKind::MsSql => "mssql",
            ServerKind::Memory => "memory",
        }
    }

    const ALL: [ServerKind; 11] = [
        ServerKind::Sqlite,
        ServerKind::Postgres,
        ServerKind::CockroachDb,
        ServerKind::YugabyteDb,
        ServerKind::Citus,
        ServerKind::MySql,
        ServerKind::MariaDb,
        ServerKind::TiDb,
        ServerKind::Vitess,
        ServerKind::MsSql,
        ServerKind::Memory,
    ];

    /// The engine a PostgreSQL-protocol server is, from `version()` and whether the `citus`
    /// extension is installed.
    pub fn from_postgres_banner(banner: &str, citus: bool) -> ServerKind {
        if banner.starts_with("CockroachDB") {
            ServerKind::CockroachDb
        } else if banner.contains("-YB-") {
            ServerKind::YugabyteDb
        } else if citus {
            ServerKind::Citus
        } else {
            ServerKind::Postgres
        }
    }

    /// The engine a MySQL-protocol server is, from `@@version` (and `@@version_comment`).
    pub fn from_mysql_banner(version: &str, comment: &str) -> ServerKind {
        let v = version.to_ascii_lowercase();
        let c = comment.to_ascii_lowercase();
        if v.contains("-tidb-") || c.contains("tidb") {
            ServerKind::TiDb
        } else if ["vitess", "planetscale"]
            .iter()
            .any(|n| v.contains(n) || c.contains(n))
        {
            ServerKind::Vitess
        } else if v.contains("mariadb") || c.contains("mariadb") {
            ServerKind::MariaDb
        } else {
            ServerKind::MySql
        }
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an engine can do; a driver branches on these flags only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EngineProfile {
    /// The engine (detected, or named by an override).
    pub server: ServerKind,
    /// `FOR UPDATE SKIP LOCKED` (or `READPAST`) takes and skips row locks. TiDB accepts the
    /// syntax and takes no lock at all, so it counts as lacking it.
    pub skip_locked: bool,
    /// LISTEN/NOTIFY across sessions.
    pub listen_notify: bool,
    /// Advisory (named) locks that serialize migrations (`pg_advisory_xact_lock`, `GET_LOCK`,
    /// `sp_getapplock`).
    pub advisory_locks: bool,
    /// A volatile function (`gen_random_uuid()`) may be evaluated per row inside an `UPDATE`
    /// (Citus refuses it on distributed tables): otherwise lease tokens are made by the client
    /// and bound.
    pub volatile_in_update: bool,
    /// Partial indexes (`CREATE INDEX ... WHERE`).
    pub partial_indexes: bool,
}

impl EngineProfile {
    /// The capabilities of `server` as this project knows them.
    pub fn of(server: ServerKind) -> EngineProfile {
        let all = EngineProfile {
            server,
            skip_locked: true,
            listen_notify: true,
            advisory_locks: true,
            volatile_in_update: true,
            partial_indexes: true,
        };
        match server {
            ServerKind::Postgres => all,
            ServerKind::Citus => EngineProfile {
                volatile_in_update: false,
                ..all
            },
            // Neither has LISTEN/NOTIFY nor working advisory locks; CockroachDB's SKIP LOCKED
            // (23.1+) and YugabyteDB's depend on settings and versions, so neither relies on it.
            ServerKind::CockroachDb | ServerKind::YugabyteDb => EngineProfile {
                skip_locked: false,
                listen_notify: false,
                advisory_locks: false,
                ..all
            },
            ServerKind::MySql | ServerKind::MariaDb => EngineProfile {
                listen_notify: false,
                partial_indexes: false,
                ..all
            },
            // TiDB takes no lock for SKIP LOCKED; Vitess rejects it; neither has GET_LOCK that
            // serializes across the cluster.
            ServerKind::TiDb | ServerKind::Vitess => EngineProfile {
                skip_locked: false,
                listen_notify: false,
                advisory_locks: false,
                partial_indexes: false,
                ..all
            },
            ServerKind::Sqlite => EngineProfile {
                skip_locked: false,
                listen_notify: false,
                advisory_locks: false,
                ..all
            },
            ServerKind::MsSql => EngineProfile {
                listen_notify: false,
                ..all
            },
            // Every statement holds the store's one lock (no row locks to skip, no named
            // locks); the store delivers notifications to every queue value on it.
            ServerKind::Memory => EngineProfile {
                skip_locked: false,
                advisory_locks: false,
                ..all
            },
        }
    }

    /// The same engine with every optional capability off: the paths any engine of the
    /// protocol can run (the optimistic claim with client-made lease tokens, no LISTEN/NOTIFY,
    /// migrations serialized by a lock row). What [`Profile::Distributed`] forces.
    pub fn distributed(self) -> EngineProfile {
        EngineProfile {
            server: self.server,
            skip_locked: false,
            listen_notify: false,
            advisory_locks: false,
            volatile_in_update: false,
            partial_indexes: self.partial_indexes,
        }
    }
}

/// How a driver settles its [`EngineProfile`]: detected from the server (the default), or
/// overridden by the builder or the URL (`profile=cockroachdb`, `profile=distributed`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Profile {
    /// Detect the engine from the server's banner at connect.
    #[default]
    Detect,
    /// Treat the server as this engine, whatever its banner says.
    As(ServerKind),
    /// The detected engine with every optional capability off
    /// ([`EngineProfile::distributed`]): what CockroachDB, YugabyteDB, TiDB or Vitess need,
    /// and how the test suite proves those paths on plain PostgreSQL and MySQL.
    Distributed,
}

impl Profile {
    /// The profile to use for a server detected as `detected`.
    pub fn settle(self, detected: ServerKind) -> EngineProfile {
        match self {
            Profile::Detect => EngineProfile::of(detected),
            Profile::As(kind) => EngineProfile::of(kind),
            Profile::Distributed => EngineProfile::of(detected).distributed(),
        }
    }
}

impl FromStr for Profile {
    type Err = Error;

    /// `detect`, `distributed`, or an engine's name (`postgres`, `cockroachdb`, `yugabytedb`,
    /// `citus`, `mysql`, `mariadb`, `tidb`, `vitess`).
    fn from_str(s: &str) -> Result<Profile> {
        match s {
            "detect" => Ok(Profile::Detect),
            "distributed" => Ok(Profile::Distributed),
            _ => ServerKind::ALL
                .into_iter()
                .find(|k| k.as_str() == s)
                .map(Profile::As)
                .ok_or_else(|| {
                    let names: Vec<&str> = ServerKind::ALL.iter().map(|k| k.as_str()).collect();
                    Error::invalid(
                        "profile",
                        format!(
                            "must be detect, distributed or one of {} (got {s:?})",
                            names.join(", ")
                        ),
                    )
                }),
        }
    }
}

impl Profile {
    /// The value of a URL's `profile` parameter; `field` names the setting in errors.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field and the parameter for an unknown profile.
    pub fn from_url(field: &str, value: &str) -> Result<Profile> {
        value.parse::<Profile>().map_err(|e| match e {
            Error::InvalidInput { rule, .. } => {
                Error::invalid(field, format!("parameter profile {rule}"))
            }
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_banners() {
        use ServerKind::*;
        let cases = [
            ("PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit", false, Postgres),
            ("PostgreSQL 18.1 (Debian 18.1-1.pgdg120+2) on x86_64-pc-linux-gnu, compiled by gcc", false, Postgres),
            ("CockroachDB CCL v23.1.11 (x86_64-pc-linux-gnu, built 2023/09/27 01:53:43, go1.19.10)", false, CockroachDb),
            ("PostgreSQL 11.2-YB-2.18.0.0-b0 on x86_64-pc-linux-gnu, compiled by clang version 15.0.3", false, YugabyteDb),
            ("PostgreSQL 16.4 on x86_64-pc-linux-gnu, compiled by gcc (GCC) 11.4.1, 64-bit", true, Citus),
        ];
        for (banner, citus, kind) in cases {
            assert_eq!(
                ServerKind::from_postgres_banner(banner, citus),
                kind,
                "{banner}"
            );
        }
    }

    #[test]
    fn mysql_banners() {
        use ServerKind::*;
        let cases = [
            ("8.0.11-TiDB-v8.5.6", "", TiDb),
            ("5.7.25-TiDB-v7.1.0", "", TiDb),
            ("8.0.23-vitess", "", Vitess),
            ("8.0.31-PlanetScale", "PlanetScale", Vitess),
            ("10.11.19-MariaDB-0+deb12u1", "Debian 12", MariaDb),
            (
                "11.4.2-MariaDB-ubu2404",
                "mariadb.org binary distribution",
                MariaDb,
            ),
            ("5.5.5-10.6.12-MariaDB", "", MariaDb),
            ("8.0.39", "MySQL Community Server - GPL", MySql),
            ("8.4.2", "MySQL Community Server - GPL", MySql),
        ];
        for (version, comment, kind) in cases {
            assert_eq!(
                ServerKind::from_mysql_banner(version, comment),
                kind,
                "{version}"
            );
        }
    }

    #[test]
    fn profiles_as_data() {
        let pg = EngineProfile::of(ServerKind::Postgres);
        assert!(pg.skip_locked && pg.listen_notify && pg.advisory_locks && pg.volatile_in_update);
        assert!(!EngineProfile::of(ServerKind::Citus).volatile_in_update);
        for kind in [
            ServerKind::TiDb,
            ServerKind::Vitess,
            ServerKind::CockroachDb,
        ] {
            let p = EngineProfile::of(kind);
            assert!(
                !p.skip_locked && !p.listen_notify && !p.advisory_locks,
                "{kind}"
            );
        }
        let d = Profile::Distributed.settle(ServerKind::Postgres);
        assert_eq!(d.server, ServerKind::Postgres);
        assert!(!d.skip_locked && !d.listen_notify && !d.advisory_locks && !d.volatile_in_update);
        assert_eq!(
            Profile::As(ServerKind::TiDb)
                .settle(ServerKind::MySql)
                .server,
            ServerKind::TiDb
        );
    }

    #[test]
    fn url_parameters_name_the_field() {
        assert_eq!(
            Profile::from_url("url", "tidb").unwrap(),
            Profile::As(ServerKind::TiDb)
        );
        let e = Profile::from_url("listen_url", "oracle").unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput { field, rule } if field == "listen_url" && rule.contains("parameter profile must be")),
            "{e}"
        );
    }

    #[test]
    fn profile_names() {
        assert_eq!(
            "distributed".parse::<Profile>().unwrap(),
            Profile::Distributed
        );
        assert_eq!(
            "cockroachdb".parse::<Profile>().unwrap(),
            Profile::As(ServerKind::CockroachDb)
        );
        let e = "cockroach".parse::<Profile>().unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput { field, rule } if field == "profile" && rule.contains("\"cockroach\"")),
            "{e}"
        );
    }
}
