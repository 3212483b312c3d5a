-- name: job_rescue
-- Expired jobs by primary key ({ids} expands to `?, ?, ...`, {token_cases} to `WHEN ? THEN ?`
-- per job), to dead when the first value is true, else to pending and due now; only rows still
-- running under the listed token with an expired lease. Assignments run left to right, so
-- `state` comes last. Binds: dead (4 times), last_error, then the lists.
-- FORCE INDEX (PRIMARY): lock by primary key first, in key order, like every other transition,
-- even when the optimizer would rather scan a small range of a secondary index (deadlocks).
UPDATE {prefix}jobs FORCE INDEX (PRIMARY)
SET run_at = IF(?, run_at, UTC_TIMESTAMP(6)),
    finished_at = IF(?, UTC_TIMESTAMP(6), NULL),
    worker = IF(?, worker, NULL),
    last_error = ?,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = IF(?, 'dead', 'pending')
WHERE id IN ({ids})
  AND lease_token = CASE id {token_cases} END
  AND state = 'running' AND lease_expires_at < UTC_TIMESTAMP(6)
