-- name: workflow_edges
-- The dependencies of workflow $1's jobs (job, the job it waits for, policy), by job then
-- dependency.
SELECT d.job_id, d.dep_id, d.policy
FROM {schema}.workflow_jobs n
JOIN {schema}.job_deps d ON d.job_id = n.job_id
WHERE n.workflow_id = $1
ORDER BY d.job_id, d.dep_id
