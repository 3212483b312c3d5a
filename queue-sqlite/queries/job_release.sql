-- name: job_release
-- Back to pending, due now, the attempt not counted. Binds: ?1 id, ?2 lease_token, ?3 now.
UPDATE queue_jobs
SET state = 'pending',
    run_at = ?3,
    attempts = max(attempts - 1, 0),
    worker = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?3
WHERE id = ?1 AND lease_token = ?2 AND state = 'running'
