-- name: job_fail_retry
-- Back to pending after a backoff (microseconds) decided by the retry policy; attempts kept;
-- no one holds it now, so the worker is cleared.
UPDATE {prefix}jobs
SET run_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)),
    last_error = ?,
    lease_token = NULL,
    lease_expires_at = NULL,
    worker = NULL,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'pending'
WHERE id = ? AND lease_token = ? AND state = 'running'
