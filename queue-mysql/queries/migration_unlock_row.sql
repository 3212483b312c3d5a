-- name: migration_unlock_row
-- Gives the lock row up. Binds: holder token.
DELETE FROM {prefix}migrations WHERE version = 0 AND name = ?
