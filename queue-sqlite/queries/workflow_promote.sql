-- name: workflow_promote
-- Of the listed jobs, each still waiting whose every dependency is resolved becomes pending,
-- due at the later of its run time and now. Resolved: completed, or, for a dependency that
-- only had to finish (policy 1), dead, cancelled or deleted too; a deleted dependency that had
-- to complete is never resolved (workflow_block cancels its dependents). The callback of an
-- open batch waits for the seal. SQLite runs one writer at a time, so the states read are
-- committed ones. The driver repeats the `(?)` tuple after VALUES once per id. Binds: now,
-- then each id.
WITH p (now) AS (SELECT ?),
r (id) AS (SELECT column1 FROM (VALUES
(?)
))
UPDATE queue_jobs
SET state = 'pending',
    run_at = MAX(queue_jobs.run_at, p.now),
    version = version + 1,
    updated_at = p.now
FROM p
WHERE queue_jobs.id IN (SELECT id FROM r)
  AND queue_jobs.state = 'waiting'
  AND NOT EXISTS (SELECT 1 FROM queue_job_deps d LEFT JOIN queue_jobs x ON x.id = d.dep_id
                  WHERE d.job_id = queue_jobs.id
                    AND NOT (coalesce(+x.state, '') = 'completed'
                             OR (d.policy = 1
                                 AND (x.id IS NULL OR +x.state IN ('dead', 'cancelled')))))
  AND NOT EXISTS (SELECT 1 FROM queue_workflows w
                  WHERE w.id = queue_jobs.workflow_id AND w.callback = queue_jobs.id
                    AND w.open = 1)
RETURNING id, queue
