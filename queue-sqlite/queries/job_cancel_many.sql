-- name: job_cancel_many
-- job_cancel for each listed job that is still waiting, pending or running (each looked up by primary
-- key). The driver repeats the `(?)` tuple after VALUES once per id; every placeholder is
-- anonymous. Binds: now, then each id.
WITH p (now) AS (SELECT ?)
UPDATE queue_jobs
SET state = 'cancelled',
    finished_at = p.now,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = p.now
FROM p, (VALUES
(?)
) AS ids
WHERE queue_jobs.id = ids.column1
  AND queue_jobs.state IN ('waiting', 'pending', 'running')
