-- name: migration_applied
-- Version 0 is the lock row of migration_lock_row, not a migration.
SELECT version::bigint FROM {schema}.migrations WHERE version > 0 ORDER BY version
