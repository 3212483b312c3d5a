-- name: migration_applied
-- Version 0 is the lock row of engines without GET_LOCK (migration_lock_row), not a migration.
SELECT version FROM {prefix}migrations WHERE version > 0 ORDER BY version
