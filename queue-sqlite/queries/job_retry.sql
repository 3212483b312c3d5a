-- name: job_retry
-- A dead or cancelled job back to pending, due now, attempts and snoozes reset (the error
-- history is kept); a step of a workflow back to waiting, which the engine settles in the same
-- transaction. Binds: ?1 id, ?2 now.
UPDATE queue_jobs
SET state = CASE WHEN workflow_id IS NULL THEN 'pending' ELSE 'waiting' END,
    attempts = 0,
    snoozes = 0, blocked_by = NULL,
    run_at = ?2,
    finished_at = NULL,
    worker = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?2
WHERE id = ?1 AND state IN ('dead', 'cancelled')
RETURNING queue
