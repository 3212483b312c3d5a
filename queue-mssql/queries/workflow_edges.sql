-- name: workflow_edges
-- The dependencies of workflow @P1's jobs: its jobs by workflow_jobs' primary key, and each
-- one's dependencies by job_deps_job_idx (job_id, dep_id), in that order.
SELECT d.job_id, d.dep_id, d.policy
FROM [{schema}].[job_deps] AS d
INNER JOIN [{schema}].[workflow_jobs] AS n
    ON n.job_id = d.job_id AND n.workflow_id = CAST(@P1 AS BINARY(16))
ORDER BY d.job_id, d.dep_id
