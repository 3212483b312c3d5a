-- name: job_fail_retry
-- Back to pending after a backoff (microseconds) decided by the retry policy; attempts kept;
-- no one holds it now, so the worker is cleared. The failure is recorded in last_error and
-- appended to the history in `errors` (the oldest entry dropped once the given number are
-- kept). Assignments run left to right, so the history is written before `worker` is cleared.
-- Binds: delay, last_error, entries kept, last_error, id, lease_token.
UPDATE {prefix}jobs
SET run_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)),
    last_error = ?,
    errors = JSON_ARRAY_APPEND(
        IF(JSON_LENGTH(COALESCE(errors, '[]')) >= ?, JSON_REMOVE(errors, '$[0]'),
           COALESCE(errors, '[]')),
        '$', JSON_OBJECT('attempt', attempts, 'at', UTC_TIMESTAMP(6), 'error', ?, 'worker', worker)),
    lease_token = NULL,
    lease_expires_at = NULL,
    worker = NULL,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'pending'
WHERE id = ? AND lease_token = ? AND state = 'running'
