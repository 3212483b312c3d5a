-- name: MigrationIsApplied
SELECT 1 FROM queue_migrations WHERE version = ?
