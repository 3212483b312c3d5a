-- name: job_expired
-- Running jobs whose lease expired, read without locks (index lease_expiry).
SELECT id, lease_token, queue, attempts, max_attempts FROM {prefix}jobs
WHERE state = 'running' AND lease_expires_at < UTC_TIMESTAMP(6)
ORDER BY lease_expires_at
LIMIT ?
