-- name: maintenance_release
-- A task's round under a token is over: the next is due an interval from now. A round whose
-- lease ran out and was taken by another process changes nothing. Binds: interval in
-- microseconds, task, token.
UPDATE {prefix}maintenance
SET token = NULL, next_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))
WHERE task = ? AND token = ?
