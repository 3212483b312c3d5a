-- name: job_retry
-- A dead or cancelled job back to pending, due now, attempts and snoozes reset (its error
-- history kept); a step of a workflow back to waiting, which the engine settles in the same
-- transaction. Returns its queue.
-- The states are written as sub-selects so that the plan looks the id up by primary key and
-- never scans the partial finished index (see job_complete_many).
UPDATE {schema}.jobs
SET state = CASE WHEN workflow_id IS NULL THEN 'pending' ELSE 'waiting' END, attempts = 0, snoozes = 0, blocked_by = NULL, run_at = now(), finished_at = NULL, updated_at = now(),
    worker = NULL, lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND state IN ((SELECT 'dead'), (SELECT 'cancelled'))
RETURNING queue
