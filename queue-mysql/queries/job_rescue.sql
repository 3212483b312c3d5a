-- name: job_rescue
-- Expired jobs by primary key ({ids} expands to `?, ?, ...`, {token_cases} to `WHEN ? THEN ?`
-- per job), to dead when the first value is true, else to pending and due now; only rows still
-- running under the listed token with an expired lease. The error is recorded in last_error
-- and appended to each job's history (as in job_fail_retry, with the worker whose lease
-- expired). Assignments run left to right, so the history comes before `worker` and `state`
-- comes last. Binds: dead, dead, last_error, entries kept, last_error, dead, dead, then the
-- lists.
-- FORCE INDEX (PRIMARY): lock by primary key first, in key order, like every other transition,
-- even when the optimizer would rather scan a small range of a secondary index (deadlocks).
UPDATE {prefix}jobs FORCE INDEX (PRIMARY)
SET run_at = IF(?, run_at, UTC_TIMESTAMP(6)),
    finished_at = IF(?, UTC_TIMESTAMP(6), NULL),
    last_error = ?,
    errors = JSON_ARRAY_APPEND(
        IF(JSON_LENGTH(COALESCE(errors, '[]')) >= ?, JSON_REMOVE(errors, '$[0]'),
           COALESCE(errors, '[]')),
        '$', JSON_OBJECT('attempt', attempts, 'at', UTC_TIMESTAMP(6), 'error', ?, 'worker', worker)),
    worker = IF(?, worker, NULL),
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = IF(?, 'dead', 'pending')
WHERE id IN ({ids})
  AND lease_token = CASE id {token_cases} END
  AND state = 'running' AND lease_expires_at < UTC_TIMESTAMP(6)
