-- name: workflow_dependents
-- The waiting jobs that depend on any of $1 (jobs that finished), each once, in id order:
-- job_deps' primary key finds the dependents, and each is looked up by id among the waiting.
SELECT DISTINCT d.job_id
FROM {schema}.job_deps d
JOIN {schema}.jobs j ON j.id = d.job_id
WHERE d.dep_id = ANY($1::uuid[]) AND j.state = 'waiting'
ORDER BY d.job_id
