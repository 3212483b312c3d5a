//! What the server is, detected at connect: MySQL, MariaDB, TiDB or Vitess, its version,
//! whether its version has `SKIP LOCKED`, and the largest packet it accepts; and how a host of
//! the URL's host list is asked what it is and whether it takes writes.

use async_trait::async_trait;
use queue_core::engine::hosts::{HostProbe, SessionAttrs};
use queue_core::{Dialect, ServerKind};
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlPool, MySqlRow};
use sqlx::{Connection, Row, SqlStr};

/// What the server is.
#[derive(Clone, Debug)]
pub(crate) struct ServerInfo {
    pub(crate) version: String,
    pub(crate) dialect: Dialect,
    /// The engine, from the version and its comment (TiDB and Vitess speak MySQL).
    pub(crate) kind: ServerKind,
    pub(crate) skip_locked: bool,
    pub(crate) max_packet: u64,
}

impl ServerInfo {
    /// Reads the row of the `server_version` statement.
    pub(crate) fn from_row(row: &MySqlRow) -> Result<Self, sqlx::Error> {
        let version: String = row.try_get_unchecked(0)?;
        let max_packet: u64 = row
            .try_get_unchecked::<i64, _>(1)
            .map(|v| v.max(0) as u64)
            .or_else(|_| row.try_get_unchecked::<u64, _>(1))?;
        let comment: String = row.try_get_unchecked(2).unwrap_or_default();
        let mut info = Self::parse(version, max_packet);
        info.kind = ServerKind::from_mysql_banner(&info.version, &comment);
        Ok(info)
    }

    /// `8.0.36` is MySQL, `10.11.6-MariaDB-...` is MariaDB. SKIP LOCKED arrived in MySQL 8.0.1
    /// and MariaDB 10.6.
    pub(crate) fn parse(version: String, max_packet: u64) -> Self {
        let mariadb = version.to_ascii_lowercase().contains("mariadb");
        let mut parts = version
            .split(|c: char| !c.is_ascii_digit())
            .map(|p| p.parse::<u32>().unwrap_or(0));
        let major = parts.next().unwrap_or(0);
        let minor = parts.next().unwrap_or(0);
        let patch = parts.next().unwrap_or(0);
        let skip_locked = if mariadb {
            (major, minor) >= (10, 6)
        } else {
            (major, minor, patch) >= (8, 0, 1)
        };
        ServerInfo {
            kind: ServerKind::from_mysql_banner(&version, ""),
            dialect: if mariadb {
                Dialect::MariaDb
            } else {
                Dialect::MySql
            },
            version,
            skip_locked,
            max_packet,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_detection() {
        let m = ServerInfo::parse("10.11.6-MariaDB-0+deb12u1".into(), 0);
        assert_eq!((m.dialect, m.skip_locked), (Dialect::MariaDb, true));
        let m = ServerInfo::parse("10.5.23-MariaDB".into(), 0);
        assert_eq!((m.dialect, m.skip_locked), (Dialect::MariaDb, false));
        let m = ServerInfo::parse("8.0.36".into(), 0);
        assert_eq!((m.dialect, m.skip_locked), (Dialect::MySql, true));
        let m = ServerInfo::parse("8.0.0-dmr".into(), 0);
        assert!(!m.skip_locked);
        let m = ServerInfo::parse("5.7.44-log".into(), 0);
        assert_eq!((m.dialect, m.skip_locked), (Dialect::MySql, false));
        let m = ServerInfo::parse("9.1.0".into(), 0);
        assert!(m.skip_locked);
        // TiDB reports a MySQL version it does not behave as: its kind says so.
        let m = ServerInfo::parse("8.0.11-TiDB-v8.5.6".into(), 0);
        assert_eq!((m.dialect, m.kind), (Dialect::MySql, ServerKind::TiDb));
    }
}

/// The hosts of the queue's pool, as the resolver of `queue_core::engine::hosts` probes them.
#[derive(Debug)]
pub(crate) struct MySqlHosts {
    pub(crate) options: Vec<MySqlConnectOptions>,
    pub(crate) pool: MySqlPool,
    pub(crate) server_version: SqlStr,
    pub(crate) server_role: SqlStr,
}

#[async_trait]
impl HostProbe for MySqlHosts {
    type Server = ServerInfo;
    type Error = sqlx::Error;

    async fn probe(
        &self,
        i: usize,
        attrs: SessionAttrs,
    ) -> Result<Result<ServerInfo, &'static str>, sqlx::Error> {
        let mut conn = MySqlConnection::connect_with(&self.options[i]).await?;
        let row = sqlx::query(self.server_version.clone())
            .fetch_one(&mut conn)
            .await?;
        let info = ServerInfo::from_row(&row)?;
        let fits = if attrs == SessionAttrs::Any {
            Ok(info)
        } else {
            let role = sqlx::query(self.server_role.clone())
                .fetch_one(&mut conn)
                .await?;
            let flag =
                |i: usize| -> Result<bool, sqlx::Error> { Ok(role.try_get::<i64, _>(i)? != 0) };
            attrs.refuses(flag(0)?, flag(1)?).map_or(Ok(info), Err)
        };
        let _ = conn.close().await;
        Ok(fits)
    }

    fn point_at(&self, i: usize) {
        self.pool.set_connect_options(self.options[i].clone());
    }
}

/// The resolver of the MySQL driver's pool.
pub(crate) type Nodes = queue_core::engine::hosts::Nodes<MySqlHosts>;
