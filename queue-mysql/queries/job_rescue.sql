-- name: JobRescue
-- Rescue, step 2, by primary key ({ids} expands to `?, ?, ...`), with the expiry re-checked so a
-- lease extended or completed meanwhile is left alone. Expired leases go back to pending (due
-- now) while attempts remain, else dead. Assignments run left to right, so `state` comes last
-- and the conditions read only attempts and max_attempts.
-- FORCE INDEX (PRIMARY): lock by primary key first, in key order, like every other transition,
-- even when the optimizer would rather scan a small range of a secondary index (deadlocks).
UPDATE {prefix}jobs FORCE INDEX (PRIMARY)
SET run_at = IF(attempts < max_attempts, UTC_TIMESTAMP(6), run_at),
    finished_at = IF(attempts < max_attempts, NULL, UTC_TIMESTAMP(6)),
    last_error = 'lease expired',
    lease_token = NULL,
    lease_expires_at = NULL,
    worker = NULL,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = IF(attempts < max_attempts, 'pending', 'dead')
WHERE id IN ({ids}) AND state = 'running' AND lease_expires_at < UTC_TIMESTAMP(6)
