-- name: job_retry_many
-- job_retry for each listed job that is still dead or cancelled, in one statement (a unique
-- or dedup key that a live job holds fails it as a whole; the engine then retries job by
-- job). The driver repeats the `(?)` tuple after VALUES once per id; every placeholder is
-- anonymous. Binds: now, then each id.
-- A step of a workflow comes back waiting, as in job_retry.
WITH p (now) AS (SELECT ?)
UPDATE queue_jobs
SET state = CASE WHEN workflow_id IS NULL THEN 'pending' ELSE 'waiting' END,
    attempts = 0,
    snoozes = 0, blocked_by = NULL,
    run_at = p.now,
    finished_at = NULL,
    worker = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = p.now
FROM p, (VALUES
(?)
) AS ids
WHERE queue_jobs.id = ids.column1
  AND queue_jobs.state IN ('dead', 'cancelled')
