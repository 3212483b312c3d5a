-- name: job_fail_dead
-- Binds: ?1 id, ?2 lease_token, ?3 now, ?4 last_error.
UPDATE queue_jobs
SET state = 'dead',
    finished_at = ?3,
    last_error = ?4,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?3
WHERE id = ?1 AND lease_token = ?2 AND state = 'running'
