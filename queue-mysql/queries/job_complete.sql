-- name: job_complete
-- Fenced by the lease token; the worker is kept, for operators; the handler's output (or NULL)
-- is stored with the completion. Binds: output, id, lease_token.
UPDATE {prefix}jobs
SET output = ?,
    lease_token = NULL,
    lease_expires_at = NULL,
    finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'completed'
WHERE id = ? AND lease_token = ? AND state = 'running'
