-- name: workflow_edges
-- The dependencies of a workflow's jobs: its jobs from workflow_jobs' primary key, each one's
-- dependencies from job_deps' index `job` (job_id, dep_id). Binds: workflow id.
SELECT d.job_id, d.dep_id, d.policy
FROM {prefix}workflow_jobs AS n
JOIN {prefix}job_deps AS d FORCE INDEX (job) ON d.job_id = n.job_id
WHERE n.workflow_id = ?
ORDER BY d.job_id, d.dep_id
