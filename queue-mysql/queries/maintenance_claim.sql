-- name: maintenance_claim
-- Takes the lease row of a task when its next run is due: `next_at` moves to the end of the
-- lease, under a new token (so the row always changes, and one affected row means taken).
-- Binds: token, lease in microseconds, task.
UPDATE {prefix}maintenance
SET token = ?, next_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))
WHERE task = ? AND next_at <= UTC_TIMESTAMP(6)
