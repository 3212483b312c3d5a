//! The schema's migrations, applied by the engine's migration loop in one transaction under a
//! transaction-scoped advisory lock, so that several processes migrating the same schema at
//! once are serialized and a failed run changes nothing.

use queue_core::engine::Migration;

/// Every migration, oldest first. Append only: an applied migration never changes.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "jobs",
        sql: include_str!("../migrations/0001_jobs.sql"),
    },
    Migration {
        version: 2,
        name: "payload_json",
        sql: include_str!("../migrations/0002_payload_json.sql"),
    },
    Migration {
        version: 3,
        name: "run_at_default",
        sql: include_str!("../migrations/0003_run_at_default.sql"),
    },
    Migration {
        version: 4,
        name: "queues",
        sql: include_str!("../migrations/0004_queues.sql"),
    },
    Migration {
        version: 5,
        name: "schedules",
        sql: include_str!("../migrations/0005_schedules.sql"),
    },
    Migration {
        version: 6,
        name: "job_kinds",
        sql: include_str!("../migrations/0006_job_kinds.sql"),
    },
    Migration {
        version: 7,
        name: "unique",
        sql: include_str!("../migrations/0007_unique.sql"),
    },
    Migration {
        version: 8,
        name: "maintenance",
        sql: include_str!("../migrations/0008_maintenance.sql"),
    },
    Migration {
        version: 9,
        name: "rate_limits",
        sql: include_str!("../migrations/0009_rate_limits.sql"),
    },
    Migration {
        version: 10,
        name: "concurrency_keys",
        sql: include_str!("../migrations/0010_concurrency_keys.sql"),
    },
    Migration {
        version: 11,
        name: "gauges",
        sql: include_str!("../migrations/0011_gauges.sql"),
    },
    Migration {
        version: 12,
        name: "schedule_kinds",
        sql: include_str!("../migrations/0012_schedule_kinds.sql"),
    },
    Migration {
        version: 13,
        name: "workflows",
        sql: include_str!("../migrations/0013_workflows.sql"),
    },
];
