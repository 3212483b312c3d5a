//! The migrations, applied by the engine's migration loop under a server-wide named lock
//! (`GET_LOCK`), or, for engines without one, a leased lock row (`LockRow`), so concurrent
//! runs are safe.
//!
//! DDL commits implicitly on MySQL and MariaDB, so a migration and its bookkeeping row cannot
//! share a transaction. Every migration is therefore written to be re-runnable
//! (`CREATE TABLE IF NOT EXISTS`, an `ALTER` that yields the same table when repeated, or one
//! `ALTER ... ADD COLUMN` whose rerun fails with "duplicate column name", which the driver takes
//! as applied): a crash between the DDL and the record only means the DDL runs again,
//! harmlessly, next time. For the same reason no row lock could be held across a migration:
//! the lock row is a lease, renewed while its holder migrates and taken over once it ran out.

use std::time::Duration;

use queue_core::engine::statements::load;
use queue_core::engine::{micros, DriverFault, Migration};
use sqlx::mysql::{MySqlConnection, MySqlPool};
use sqlx::pool::PoolConnection;
use sqlx::MySql;

/// How long `migrate` waits for another process's migration to finish.
pub(crate) const MIGRATION_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// The lease of the migration lock row (engines without `GET_LOCK`): a migrator that died
/// holds the others up for at most this long. A live one renews it every third of it from a
/// task of its own, on another connection, also while its DDL runs.
const MIGRATION_LOCK_LEASE: Duration = Duration::from_secs(30);

/// A migration session: its connection, and the lock row it holds when the engine has no
/// `GET_LOCK`.
#[derive(Debug)]
pub struct Migrator {
    pub(crate) conn: PoolConnection<MySql>,
    pub(crate) row: Option<LockRow>,
}

/// The error of a migration lock that was not taken within [`MIGRATION_LOCK_TIMEOUT`].
pub(crate) fn lock_timeout(prefix: &str) -> sqlx::Error {
    sqlx::Error::Protocol(format!(
        "timed out after {MIGRATION_LOCK_TIMEOUT:?} waiting for the migration lock of prefix {prefix}"
    ))
}

/// The two statements that take or renew the lock row (`migration_lock_row`,
/// `migration_lock_lease`).
#[derive(Clone, Debug)]
pub(crate) struct LockRowSql {
    pub(crate) take: sqlx::SqlStr,
    pub(crate) lease: sqlx::SqlStr,
}

impl LockRowSql {
    /// Takes the lock row for `token`, or renews it, or takes it over when its lease ran out;
    /// whether `token` holds it now.
    async fn hold(&self, conn: &mut MySqlConnection, token: &str) -> Result<bool, sqlx::Error> {
        let lease = micros(MIGRATION_LOCK_LEASE);
        let taken = sqlx::query(self.take.clone())
            .bind(token)
            .bind(lease)
            .execute(&mut *conn)
            .await?;
        if taken.rows_affected() == 1 {
            return Ok(true);
        }
        let held = sqlx::query(self.lease.clone())
            .bind(token)
            .bind(lease)
            .bind(token)
            .execute(&mut *conn)
            .await?;
        Ok(held.rows_affected() == 1)
    }

    /// Renews `token`'s lease every third of it, on connections of `pool`, until it is lost
    /// (then the next migration of its holder finds that out and stops) or the task is aborted.
    async fn renew(self, pool: MySqlPool, token: String) {
        loop {
            tokio::time::sleep(MIGRATION_LOCK_LEASE / 3).await;
            let renewed = match pool.acquire().await {
                Ok(mut conn) => self.hold(&mut conn, &token).await,
                Err(e) => Err(e),
            };
            match renewed {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(target: crate::LOG_TARGET, "the migration lock row was taken over by another migrator");
                    return;
                }
                // Tried again at the next third; the lease outlasts two failed renewals.
                Err(error) => {
                    tracing::warn!(target: crate::LOG_TARGET, %error, "could not renew the migration lock row");
                }
            }
        }
    }
}

/// A held migration lock row: its holder's token, and the task that renews its lease (stopped
/// when this is dropped).
#[derive(Debug)]
pub(crate) struct LockRow {
    token: String,
    renewer: tokio::task::JoinHandle<()>,
}

impl Drop for LockRow {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

impl LockRow {
    /// Takes the lock row of `prefix` on `conn` under a new token, waiting while another
    /// migrator's lease runs (at most [`MIGRATION_LOCK_TIMEOUT`]), then renews it from a task
    /// on connections of `pool` until the returned value is dropped or stopped.
    pub(crate) async fn take(
        sql: LockRowSql,
        conn: &mut MySqlConnection,
        pool: &MySqlPool,
        prefix: &str,
    ) -> Result<Self, sqlx::Error> {
        let token = uuid::Uuid::new_v4().to_string();
        let deadline = tokio::time::Instant::now() + MIGRATION_LOCK_TIMEOUT;
        loop {
            match sql.hold(conn, &token).await {
                Ok(true) => break,
                Ok(false) => {}
                // Two waiters taking over one expired row at once: one wins, the other waits.
                Err(e) if crate::error::classify(&e) == DriverFault::LockConflict => {}
                Err(e) => return Err(e),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(lock_timeout(prefix));
            }
            tokio::time::sleep(Duration::from_millis(50 + fastrand::u64(..50))).await;
        }
        let renewer = tokio::spawn(sql.renew(pool.clone(), token.clone()));
        Ok(LockRow { token, renewer })
    }

    /// Renews the lease on `conn` before a migration runs: a lease lost to another migrator
    /// (its renewals failed for longer than the lease) stops here rather than run DDL beside
    /// the new holder.
    pub(crate) async fn check(
        &self,
        sql: &LockRowSql,
        conn: &mut MySqlConnection,
        prefix: &str,
    ) -> Result<(), sqlx::Error> {
        if sql.hold(conn, &self.token).await? {
            return Ok(());
        }
        Err(sqlx::Error::Protocol(format!(
            "the migration lock row of prefix {prefix} was taken over by another migrator: \
             this one could not renew its lease of {MIGRATION_LOCK_LEASE:?} in time"
        )))
    }

    /// Stops the renewals; the token, for `migration_unlock_row`.
    pub(crate) fn stop(mut self) -> String {
        self.renewer.abort();
        std::mem::take(&mut self.token)
    }
}

/// Every migration, in order. Append only: an applied migration never changes.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "create_jobs",
        sql: include_str!("../migrations/0001_create_jobs.sql"),
    },
    Migration {
        version: 2,
        name: "dedup_bytes",
        sql: include_str!("../migrations/0002_dedup_bytes.sql"),
    },
    Migration {
        version: 3,
        name: "queues",
        sql: include_str!("../migrations/0003_queues.sql"),
    },
    Migration {
        version: 4,
        name: "schedules",
        sql: include_str!("../migrations/0004_schedules.sql"),
    },
    Migration {
        version: 5,
        name: "job_kinds",
        sql: include_str!("../migrations/0005_job_kinds.sql"),
    },
    Migration {
        version: 6,
        name: "unique",
        sql: include_str!("../migrations/0006_unique.sql"),
    },
    Migration {
        version: 7,
        name: "maintenance",
        sql: include_str!("../migrations/0007_maintenance.sql"),
    },
    Migration {
        version: 8,
        name: "rate_limits",
        sql: include_str!("../migrations/0008_rate_limits.sql"),
    },
    Migration {
        version: 9,
        name: "concurrency_keys",
        sql: include_str!("../migrations/0009_concurrency_keys.sql"),
    },
    Migration {
        version: 10,
        name: "gauges",
        sql: include_str!("../migrations/0010_gauges.sql"),
    },
    Migration {
        version: 11,
        name: "schedule_kinds",
        sql: include_str!("../migrations/0011_schedule_kinds.sql"),
    },
    Migration {
        version: 12,
        name: "workflows",
        sql: include_str!("../migrations/0012_workflows.sql"),
    },
    Migration {
        version: 13,
        name: "finished_index",
        sql: include_str!("../migrations/0013_finished_index.sql"),
    },
    Migration {
        version: 14,
        name: "workflows_by_age",
        sql: include_str!("../migrations/0014_workflows_by_age.sql"),
    },
];

/// Whether a migration statement only drops one index (`ALTER TABLE t DROP INDEX i`): the one
/// kind of statement whose "can't drop" (1091) on a rerun means it was applied.
pub(crate) fn is_lone_drop(stmt: &str) -> bool {
    let words: Vec<&str> = stmt.split_whitespace().collect();
    matches!(
        words.as_slice(),
        ["ALTER", "TABLE", _, "DROP", "INDEX", name] if !name.contains(',')
    )
}

/// The statements of a migration file: comments dropped, the prefix spliced in, split on `;`
/// at the end of a line.
pub(crate) fn statements(sql: &str, prefix: &str) -> Vec<String> {
    load(sql, &[("{prefix}", prefix)])
        .split(";\n")
        .map(|s| s.trim().trim_end_matches(';').trim())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_statements_are_prefixed_and_comment_free() {
        let stmts = statements(MIGRATIONS[0].sql, "abc_");
        assert_eq!(stmts.len(), 1);
        assert!(stmts[0].starts_with("CREATE TABLE IF NOT EXISTS abc_jobs"));
        assert!(!stmts[0].contains("--"));
        assert!(!stmts[0].contains("{prefix}"));
        let stmts = statements(MIGRATIONS[1].sql, "abc_");
        assert_eq!(stmts.len(), 1);
        assert!(stmts[0].starts_with("ALTER TABLE abc_jobs"));
        // Unique jobs: the plain columns, the virtual one alone (so that MariaDB adds it in
        // place), then the index, each one ALTER that a rerun refuses with "duplicate column"
        // or "duplicate key name".
        let stmts = statements(MIGRATIONS[5].sql, "abc_");
        assert_eq!(stmts.len(), 3);
        assert!(stmts[0].contains("ADD COLUMN unique_states") && !stmts[0].contains("VIRTUAL"));
        assert!(stmts[1].contains("ADD COLUMN unique_live") && stmts[1].ends_with("VIRTUAL"));
        assert_eq!(stmts[1].matches("ADD COLUMN").count(), 1);
        assert_eq!(
            stmts[2],
            "ALTER TABLE abc_jobs ADD UNIQUE KEY unique_live (unique_live)"
        );
        // Concurrency keys: the same shape (the plain column, the virtual one alone, the index),
        // then the queues' columns, then the table of key rate counts.
        let stmts = statements(MIGRATIONS[8].sql, "abc_");
        assert_eq!(MIGRATIONS[8].version, 9);
        assert_eq!(stmts.len(), 5);
        assert!(stmts[0].contains("ADD COLUMN concurrency_key") && !stmts[0].contains("VIRTUAL"));
        assert!(stmts[1].contains("ADD COLUMN pending_key") && stmts[1].ends_with("VIRTUAL"));
        assert_eq!(stmts[1].matches("ADD COLUMN").count(), 1);
        assert_eq!(
            stmts[2],
            "ALTER TABLE abc_jobs ADD KEY key_claim (queue, pending_key, claim_priority, run_at, id)"
        );
        assert!(stmts[3].starts_with("ALTER TABLE abc_queues"));
        assert_eq!(stmts[3].matches("ADD COLUMN").count(), 5);
        assert!(stmts[4].starts_with("CREATE TABLE IF NOT EXISTS abc_queue_key_rates"));
        for stmt in &stmts {
            assert!(!stmt.contains("--") && !stmt.contains("{prefix}"));
        }
    }

    #[test]
    fn the_finished_index_migration_is_three_rerunnable_statements() {
        let m = &MIGRATIONS[12];
        assert_eq!((m.version, m.name), (13, "finished_index"));
        let stmts = statements(m.sql, "abc_");
        assert_eq!(stmts.len(), 3);
        // Finished rows without a lease first, read along the old lease_expiry.
        assert!(stmts[0].starts_with("UPDATE abc_jobs SET lease_expires_at = NULL"));
        assert!(stmts[0].ends_with("AND lease_expires_at IS NOT NULL"));
        // The redefinition yields the same table when repeated; the drop is refused with
        // "can't drop" (1091), taken as applied.
        assert_eq!(
            stmts[1],
            "ALTER TABLE abc_jobs\n    DROP INDEX lease_expiry,\n    \
             ADD INDEX lease_expiry (state, lease_expires_at, finished_at)"
        );
        assert_eq!(stmts[2], "ALTER TABLE abc_jobs DROP INDEX finished");
        // Only the last is a lone drop, whose "can't drop" on a rerun means applied.
        let lone: Vec<bool> = stmts.iter().map(|s| is_lone_drop(s)).collect();
        assert_eq!(lone, [false, false, true]);
        assert!(!is_lone_drop(
            "ALTER TABLE abc_jobs DROP INDEX a, DROP INDEX b"
        ));
        assert!(!is_lone_drop(
            "ALTER TABLE abc_jobs DROP INDEX a, ADD INDEX a (b)"
        ));
    }

    #[test]
    fn the_workflow_migration_alters_jobs_once_and_adds_no_index_there() {
        let m = &MIGRATIONS[11];
        assert_eq!((m.version, m.name), (12, "workflows"));
        let stmts = statements(m.sql, "abc_");
        assert_eq!(stmts.len(), 4);
        let alters: Vec<&String> = stmts
            .iter()
            .filter(|s| s.starts_with("ALTER TABLE abc_jobs"))
            .collect();
        assert_eq!(alters.len(), 1);
        assert_eq!(alters[0].matches("ADD COLUMN").count(), 2);
        assert!(!alters[0].contains("KEY") && !alters[0].contains("ALGORITHM"));
        for (stmt, table) in stmts[1..]
            .iter()
            .zip(["workflows", "workflow_jobs", "job_deps"])
        {
            assert!(
                stmt.starts_with(&format!("CREATE TABLE IF NOT EXISTS abc_{table} (")),
                "{stmt}"
            );
        }
        for stmt in &stmts {
            assert!(!stmt.contains("--") && !stmt.contains("{prefix}"));
        }
    }

    #[test]
    fn migrations_are_numbered_in_order() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1, "{}", m.name);
        }
    }
}
