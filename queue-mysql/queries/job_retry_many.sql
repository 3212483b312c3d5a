-- name: job_retry_many
-- job_retry for each listed job that is still dead or cancelled ({ids} expands to
-- `?, ?, ...`), in one statement: a unique or dedup key that a live job holds fails it as a
-- whole (1062), and the engine then retries job by job. A step of a workflow comes back
-- waiting, as in job_retry.
UPDATE {prefix}jobs FORCE INDEX (PRIMARY)
SET attempts = 0,
    snoozes = 0, blocked_by = NULL,
    run_at = UTC_TIMESTAMP(6),
    finished_at = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    worker = NULL,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = CASE WHEN workflow_id IS NULL THEN 'pending' ELSE 'waiting' END
WHERE id IN ({ids}) AND state IN ('dead', 'cancelled')
