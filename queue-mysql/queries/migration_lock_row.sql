-- name: migration_lock_row
-- The migration lock of engines without GET_LOCK (TiDB, Vitess, the distributed profile): a
-- leased row of the migrations table, version 0, naming its holder. DDL commits implicitly, so
-- no row lock can be held across a migration; the holder renews the lease from a second
-- connection while it migrates, and a holder that died is taken over once its lease has run
-- out (migration_lock_lease).
-- Binds: holder token, lease in microseconds. One row affected: the lock is taken.
INSERT IGNORE INTO {prefix}migrations (version, name, applied_at)
VALUES (0, ?, DATE_ADD(UTC_TIMESTAMP(6), INTERVAL ? MICROSECOND))
