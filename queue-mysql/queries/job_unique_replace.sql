-- name: job_unique_replace
-- A unique push met the pending job and replaces its payload, priority and run time.
-- Binds: payload, priority, delay in microseconds, id.
UPDATE {prefix}jobs
SET payload = ?,
    priority = ?,
    run_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)),
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1
WHERE id = ? AND state = 'pending'
