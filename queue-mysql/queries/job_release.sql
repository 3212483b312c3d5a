-- name: job_release
-- Back to pending, due now, the attempt not counted.
UPDATE {prefix}jobs
SET run_at = UTC_TIMESTAMP(6),
    attempts = IF(attempts > 0, attempts - 1, 0),
    lease_token = NULL,
    lease_expires_at = NULL,
    worker = NULL,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'pending'
WHERE id = ? AND lease_token = ? AND state = 'running'
