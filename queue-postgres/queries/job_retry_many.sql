-- name: job_retry_many
-- job_retry for each job of $1 that is still dead or cancelled, in one statement (a unique or
-- dedup key that a live job holds fails it as a whole; the engine then retries job by job). A
-- step of a workflow comes back waiting, as in job_retry.
UPDATE {schema}.jobs
SET state = CASE WHEN workflow_id IS NULL THEN 'pending' ELSE 'waiting' END, attempts = 0, snoozes = 0, blocked_by = NULL, run_at = now(), finished_at = NULL, updated_at = now(),
    worker = NULL, lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = ANY($1::uuid[]) AND state IN ((SELECT 'dead'), (SELECT 'cancelled'))
