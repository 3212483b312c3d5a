-- name: job_extend
-- Binds: ?1 id, ?2 lease_token, ?3 now, ?4 lease_expires_at.
UPDATE queue_jobs
SET lease_expires_at = ?4,
    version = version + 1,
    updated_at = ?3
WHERE id = ?1 AND lease_token = ?2 AND state = 'running'
