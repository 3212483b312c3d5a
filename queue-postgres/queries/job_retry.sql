-- name: job_retry
-- A dead or cancelled job back to pending, due now, attempts reset; returns its queue.
UPDATE {schema}.jobs
SET state = 'pending', attempts = 0, run_at = now(), finished_at = NULL, updated_at = now(),
    worker = NULL, lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND state IN ('dead', 'cancelled')
RETURNING queue
