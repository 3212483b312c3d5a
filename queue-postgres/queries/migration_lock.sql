-- name: MigrationLock
-- Serializes concurrent migrations of one schema until the transaction ends.
SELECT pg_advisory_xact_lock(hashtext($1))
