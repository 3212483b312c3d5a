-- name: migration_lock_lease
-- Renews the lock row's lease for its holder, or takes the row over when its lease has run out.
-- Binds: holder token, lease in microseconds, holder token. One row affected: the lock is held.
UPDATE {prefix}migrations
SET name = ?, applied_at = DATE_ADD(UTC_TIMESTAMP(6), INTERVAL ? MICROSECOND)
WHERE version = 0 AND (name = ? OR applied_at < UTC_TIMESTAMP(6))
