-- name: job_fail_dead
-- Dead, the failure recorded in last_error and appended to the history (as in
-- job_fail_retry). Binds: last_error, entries kept, last_error, id, lease_token.
UPDATE {prefix}jobs
SET last_error = ?,
    errors = JSON_ARRAY_APPEND(
        IF(JSON_LENGTH(COALESCE(errors, '[]')) >= ?, JSON_REMOVE(errors, '$[0]'),
           COALESCE(errors, '[]')),
        '$', JSON_OBJECT('attempt', attempts, 'at', UTC_TIMESTAMP(6), 'error', ?, 'worker', worker)),
    lease_token = NULL,
    lease_expires_at = NULL,
    finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'dead'
WHERE id = ? AND lease_token = ? AND state = 'running'
