-- name: migration_applied
SELECT version FROM {prefix}migrations ORDER BY version
