-- name: job_complete
-- Fenced by the lease token; the worker is kept, for operators; the handler's output (or NULL)
-- is stored with the completion. Binds: ?1 id, ?2 lease_token, ?3 now, ?4 output.
UPDATE queue_jobs
SET state = 'completed',
    finished_at = ?3,
    output = ?4,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?3
WHERE id = ?1 AND lease_token = ?2 AND state = 'running'
