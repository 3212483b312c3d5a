-- name: workflow_blocked
-- In a retry's transaction: of the listed jobs, each with a dependency that had to complete
-- (policy 0) but is dead or cancelled, or was deleted, with the least such (what a retry of
-- it would wait for in vain). A seek of the dependencies' index per job, each dependency
-- looked up by primary key. The driver repeats the `(?)` tuple after VALUES once per id.
-- Binds: each id.
SELECT b.id, b.blocked_by FROM (
    SELECT r.column1 AS id,
           (SELECT d.dep_id FROM queue_job_deps d LEFT JOIN queue_jobs x ON x.id = d.dep_id
            WHERE d.job_id = r.column1 AND d.policy = 0
              AND (x.id IS NULL OR +x.state IN ('dead', 'cancelled'))
            ORDER BY d.dep_id LIMIT 1) AS blocked_by
    FROM (VALUES
(?)
    ) r
) b
WHERE b.blocked_by IS NOT NULL
