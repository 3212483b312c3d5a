-- name: job_state_locked
-- As job_state, inside the caller's transaction: a locking read sees the latest committed row
-- whatever the transaction's isolation level.
SELECT state FROM {prefix}jobs WHERE id = ? FOR UPDATE
