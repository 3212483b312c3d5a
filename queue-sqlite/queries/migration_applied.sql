-- name: migration_applied
SELECT version FROM queue_migrations ORDER BY version
