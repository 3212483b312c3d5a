-- name: migration_applied
SELECT version::bigint FROM {schema}.migrations ORDER BY version
