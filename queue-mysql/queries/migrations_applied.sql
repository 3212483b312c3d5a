-- name: MigrationsApplied
SELECT version FROM {prefix}migrations ORDER BY version
