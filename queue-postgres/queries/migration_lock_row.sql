-- name: migration_lock_row
-- `migration_lock` for engine profiles without advisory locks: the migration transaction
-- writes the lock row (version 0, never a migration) of the migrations table, and the row lock
-- serializes concurrent migrations of the schema until that transaction ends.
INSERT INTO {schema}.migrations (version, name) VALUES (0, 'lock')
ON CONFLICT (version) DO UPDATE SET applied_at = now()
