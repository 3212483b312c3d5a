-- name: job_workflows
-- The workflows the listed jobs are steps of, each once, in id order (each job looked up by
-- primary key). The driver repeats the `(?)` tuple after VALUES once per id. Binds: each id.
SELECT DISTINCT workflow_id FROM queue_jobs
WHERE id IN (VALUES
(?)
)
  AND workflow_id IS NOT NULL
ORDER BY workflow_id
