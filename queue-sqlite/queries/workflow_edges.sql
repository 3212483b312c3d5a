-- name: workflow_edges
-- The dependencies of a workflow's jobs. Binds: ?1 workflow id.
SELECT d.job_id, d.dep_id, d.policy
FROM queue_workflow_jobs n
JOIN queue_job_deps d ON d.job_id = n.job_id
WHERE n.workflow_id = ?1
ORDER BY d.job_id, d.dep_id
