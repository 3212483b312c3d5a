-- name: workflow_block
-- Of the listed jobs, each still waiting with a dependency that had to complete (policy 0)
-- but ended dead or cancelled, or was deleted, is cancelled, naming that dependency (the least
-- id of such) in blocked_by. SQLite runs one writer at a time, so the states read are
-- committed ones and no retry runs meanwhile. The driver repeats the `(?)` tuple after VALUES
-- once per id. Binds: now, then each id.
WITH p (now) AS (SELECT ?),
r (id) AS (SELECT column1 FROM (VALUES
(?)
))
UPDATE queue_jobs
SET state = 'cancelled',
    blocked_by = (SELECT d.dep_id FROM queue_job_deps d LEFT JOIN queue_jobs x ON x.id = d.dep_id
                  WHERE d.job_id = queue_jobs.id AND d.policy = 0
                    AND (x.id IS NULL OR +x.state IN ('dead', 'cancelled'))
                  ORDER BY d.dep_id LIMIT 1),
    finished_at = p.now,
    version = version + 1,
    updated_at = p.now
FROM p
WHERE queue_jobs.id IN (SELECT id FROM r)
  AND queue_jobs.state = 'waiting'
  AND EXISTS (SELECT 1 FROM queue_job_deps d LEFT JOIN queue_jobs x ON x.id = d.dep_id
              WHERE d.job_id = queue_jobs.id AND d.policy = 0
                AND (x.id IS NULL OR +x.state IN ('dead', 'cancelled')))
RETURNING id
