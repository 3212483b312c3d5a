-- name: job_fail_dead
UPDATE {prefix}jobs
SET last_error = ?,
    lease_token = NULL,
    lease_expires_at = NULL,
    finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'dead'
WHERE id = ? AND lease_token = ? AND state = 'running'
