-- name: job_fail_retry
-- Back to pending at ?4 with the failure recorded; no one holds it now, so the worker is
-- cleared. Binds: ?1 id, ?2 lease_token, ?3 now, ?4 run_at, ?5 last_error.
UPDATE queue_jobs
SET state = 'pending',
    run_at = ?4,
    last_error = ?5,
    worker = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?3
WHERE id = ?1 AND lease_token = ?2 AND state = 'running'
