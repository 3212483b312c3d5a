//! The schema's migrations, applied by the engine's migration loop in one transaction under a
//! transaction-scoped advisory lock (or, on engines without advisory locks, a lock row written
//! in that transaction: [`lock_row`]), so that several processes migrating the same schema at
//! once are serialized and a failed run changes nothing.

use std::time::Duration;

use queue_core::engine::Migration;
use sqlx::{PgPool, Postgres, Transaction};

use crate::sql::Statements;

/// The migration that makes `jobs_done` and `jobs_all`, which finished partitions need.
pub(crate) const FINISHED_JOBS: i64 = 16;

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
    Migration {
        version: 14,
        name: "finished_index",
        sql: include_str!("../migrations/0014_finished_index.sql"),
    },
    Migration {
        version: 15,
        name: "workflows_by_age",
        sql: include_str!("../migrations/0015_workflows_by_age.sql"),
    },
    Migration {
        version: FINISHED_JOBS,
        name: "finished_jobs",
        sql: include_str!("../migrations/0016_finished_jobs.sql"),
    },
];

/// The migration lock of engines without advisory locks: the migrations table is created
/// (a concurrent creator that wins makes this one fail with a duplicate: then it looks
/// again, after a pause), and its lock row, written inside the migration transaction, holds
/// every other migrator of the schema until that transaction ends. `named`: whether statements
/// are prepared by name (see the driver's `pinned`).
pub(crate) async fn lock_row(
    pool: &PgPool,
    sql: &Statements,
    named: bool,
) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
    let mut tries = 0;
    loop {
        let mut tx = pool.begin().await?;
        let created = sqlx::raw_sql(sql.migration_table.clone())
            .execute(&mut *tx)
            .await;
        match created {
            Ok(_) => {}
            Err(sqlx::Error::Database(db))
                if tries < 10
                    && matches!(db.code().as_deref(), Some("23505" | "42P06" | "42P07")) =>
            {
                tries += 1;
                let _ = tx.rollback().await;
                tokio::time::sleep(Duration::from_millis(20 + fastrand::u64(..30))).await;
                continue;
            }
            Err(e) => return Err(e),
        }
        sqlx::query(sql.migration_lock_row.clone())
            .persistent(named)
            .execute(&mut *tx)
            .await?;
        return Ok(tx);
    }
}
