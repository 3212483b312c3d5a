-- name: job_deps
-- What job $1 depends on, in the dependencies' id order: each one's id, step name in the
-- job's workflow ('' when it has none), policy, and its job's state and output (NULL when that
-- job was deleted).
SELECT d.dep_id, coalesce(n.step, '') AS step, d.policy, p.state, p.output
FROM {schema}.job_deps d
LEFT JOIN {schema}.jobs p ON p.id = d.dep_id
LEFT JOIN {schema}.workflow_jobs n
    ON n.job_id = d.dep_id
   AND n.workflow_id = (SELECT w.workflow_id FROM {schema}.jobs w WHERE w.id = $1)
WHERE d.job_id = $1
ORDER BY d.dep_id
