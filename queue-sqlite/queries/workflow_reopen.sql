-- name: workflow_reopen
-- In a retry's transaction, after the listed jobs came back: the jobs their failure cancelled
-- (blocked_by one of them) wait again. Found through the dependencies' primary key, so a retry of a job nothing
-- depends on costs one seek. The driver repeats the `(?)` tuple after VALUES once per id.
-- Binds: now, then each id.
WITH p (now) AS (SELECT ?),
r (id) AS (SELECT column1 FROM (VALUES
(?)
))
UPDATE queue_jobs
SET state = 'waiting',
    blocked_by = NULL,
    finished_at = NULL,
    version = version + 1,
    updated_at = p.now
FROM p
WHERE queue_jobs.id IN (SELECT d.job_id FROM queue_job_deps d WHERE d.dep_id IN (SELECT id FROM r))
  AND queue_jobs.state = 'cancelled'
  AND queue_jobs.blocked_by IN (SELECT id FROM r)
RETURNING id
