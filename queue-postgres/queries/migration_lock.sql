-- name: migration_lock
-- Serializes concurrent migrations of one schema until the migration transaction ends (so there
-- is no migration_unlock statement: the commit or rollback releases it).
SELECT pg_advisory_xact_lock(hashtext($1))
