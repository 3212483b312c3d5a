-- name: JobFailRetry
-- Back to pending after a backoff (microseconds) decided by the retry policy; attempts kept.
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
