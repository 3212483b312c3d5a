-- name: JobRescueExpired
-- Running jobs whose lease expired go back to pending (or dead when their attempts are used
-- up). Binds: ?1 now.
UPDATE queue_jobs
SET state = CASE WHEN attempts < max_attempts THEN 'pending' ELSE 'dead' END,
    run_at = CASE WHEN attempts < max_attempts THEN ?1 ELSE run_at END,
    finished_at = CASE WHEN attempts < max_attempts THEN NULL ELSE ?1 END,
    last_error = 'lease expired',
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?1
WHERE state = 'running' AND lease_expires_at < ?1
