-- name: job_workflows
-- The workflows the listed jobs ({ids} expands to `?, ?, ...`) are steps of, each once, in id
-- order (each job by primary key). Binds: the ids.
SELECT DISTINCT workflow_id FROM {prefix}jobs FORCE INDEX (PRIMARY)
WHERE id IN ({ids}) AND workflow_id IS NOT NULL
ORDER BY workflow_id
