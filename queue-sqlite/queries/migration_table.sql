-- name: migration_table
CREATE TABLE IF NOT EXISTS queue_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
)
