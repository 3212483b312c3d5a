-- name: job_deps
-- What a job depends on, each with its step name, policy, and its job's state and output
-- (NULL when that job was deleted), in the dependencies' id order. Binds: ?1 job id.
SELECT d.dep_id, d.policy, x.state, x.output, n.step
FROM queue_job_deps d
LEFT JOIN queue_jobs x ON x.id = d.dep_id
LEFT JOIN queue_workflow_jobs n
       ON n.job_id = d.dep_id
      AND n.workflow_id = (SELECT workflow_id FROM queue_jobs WHERE id = ?1)
WHERE d.job_id = ?1
ORDER BY d.dep_id
