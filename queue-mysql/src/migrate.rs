//! The migrations, applied by the engine's migration loop under a server-wide named lock
//! (`GET_LOCK`), or, for engines without one, a leased lock row (see the driver's
//! `migration_lock`), so concurrent runs are safe.
//!
//! DDL commits implicitly on MySQL and MariaDB, so a migration and its bookkeeping row cannot
//! share a transaction. Every migration is therefore written to be re-runnable
//! (`CREATE TABLE IF NOT EXISTS`, an `ALTER` that yields the same table when repeated, or one
//! `ALTER ... ADD COLUMN` whose rerun fails with "duplicate column name", which the driver takes
//! as applied): a crash between the DDL and the record only means the DDL runs again,
//! harmlessly, next time.

use queue_core::engine::statements::load;
use queue_core::engine::Migration;

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
];

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
