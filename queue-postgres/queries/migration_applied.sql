-- name: MigrationApplied
SELECT version FROM {schema}.migrations ORDER BY version
