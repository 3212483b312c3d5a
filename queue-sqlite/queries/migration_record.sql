-- name: MigrationRecord
INSERT INTO queue_migrations (version, name, applied_at) VALUES (?, ?, ?)
