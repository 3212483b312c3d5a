-- name: job_workflows
-- The workflows the jobs of $1 are steps of, each once, in id order (each job by primary key).
SELECT DISTINCT workflow_id FROM {schema}.jobs
WHERE id = ANY($1::uuid[]) AND workflow_id IS NOT NULL
ORDER BY workflow_id
