//! The database file's migrations, applied by the engine's migration loop inside one
//! `BEGIN IMMEDIATE` transaction (SQLite's DDL is transactional): a failed run changes nothing,
//! and a second process migrating the same file waits for the first, then finds nothing to do.

use queue_core::engine::Migration;

/// Every migration, oldest first. Append only: an applied migration never changes.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../migrations/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "queues",
        sql: include_str!("../migrations/0002_queues.sql"),
    },
    Migration {
        version: 3,
        name: "schedules",
        sql: include_str!("../migrations/0003_schedules.sql"),
    },
    Migration {
        version: 4,
        name: "job_kinds",
        sql: include_str!("../migrations/0004_job_kinds.sql"),
    },
    Migration {
        version: 5,
        name: "unique",
        sql: include_str!("../migrations/0005_unique.sql"),
    },
    Migration {
        version: 6,
        name: "maintenance",
        sql: include_str!("../migrations/0006_maintenance.sql"),
    },
    Migration {
        version: 7,
        name: "rate_limits",
        sql: include_str!("../migrations/0007_rate_limits.sql"),
    },
    Migration {
        version: 8,
        name: "concurrency_keys",
        sql: include_str!("../migrations/0008_concurrency_keys.sql"),
    },
    Migration {
        version: 9,
        name: "gauges",
        sql: include_str!("../migrations/0009_gauges.sql"),
    },
    Migration {
        version: 10,
        name: "schedule_kinds",
        sql: include_str!("../migrations/0010_schedule_kinds.sql"),
    },
    Migration {
        version: 11,
        name: "workflows",
        sql: include_str!("../migrations/0011_workflows.sql"),
    },
    Migration {
        version: 12,
        name: "finished_index",
        sql: include_str!("../migrations/0012_finished_index.sql"),
    },
    Migration {
        version: 13,
        name: "workflows_by_age",
        sql: include_str!("../migrations/0013_workflows_by_age.sql"),
    },
];
