-- name: JobExpired
-- Rescue, step 1: running jobs whose lease expired, read without locks (index lease_expiry).
SELECT id FROM {prefix}jobs
WHERE state = 'running' AND lease_expires_at < UTC_TIMESTAMP(6)
LIMIT ?
