//! The store's migrations. There is no SQL to run: a migration is a change to the tables the
//! driver makes itself, named by its version, and recorded like every dialect's. The engine's
//! migration loop runs them inside one transaction of the store's (its lock serializes
//! concurrent migrations; a failed run changes nothing).

use queue_core::engine::Migration;

/// Every migration, oldest first. Append only: an applied migration never changes.
pub(crate) const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    name: "init",
    sql: "the jobs table and its indexes (claim order per queue and per concurrency key, \
          leases, finish times, live dedup keys, held unique keys), queue controls, per-key rate \
          counts, schedules, and the maintenance tasks' lease rows (retention, queue gauges)",
}];
