-- name: job_deps
-- What job @P1 depends on, in the dependencies' id order (job_deps_job_idx): each dependency's
-- id, its step name in @P1's workflow (N'' when missing), the policy (0: must complete; 1: any
-- finished outcome), and its job's state and output (NULL when that job was deleted).
SELECT d.dep_id, COALESCE(n.step, N'') AS step, d.policy, p.state, p.output
FROM [{schema}].[job_deps] AS d
LEFT JOIN [{schema}].[jobs] AS p ON p.id = d.dep_id
LEFT JOIN [{schema}].[jobs] AS me ON me.id = d.job_id
LEFT JOIN [{schema}].[workflow_jobs] AS n ON n.workflow_id = me.workflow_id AND n.job_id = d.dep_id
WHERE d.job_id = CAST(@P1 AS BINARY(16))
ORDER BY d.dep_id
