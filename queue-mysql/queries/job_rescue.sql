-- name: JobRescue
-- Rescue, step 2, by primary key ({ids} expands to `?, ?, ...`) and re-checked, so it locks rows
-- in the same order (primary key first) as every other transition and a lease extended or
-- completed meanwhile is left alone. Expired leases: back to pending (due now) while attempts remain, else dead. Assignments run
-- left to right, so `state` comes last and the conditions read only attempts and max_attempts.
UPDATE {prefix}jobs
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
