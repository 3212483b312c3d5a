-- name: job_deps
-- What a job depends on, in the dependencies' id order: each one's policy, its step name in
-- the job's workflow (a primary-key lookup in workflow_jobs through the job's workflow_id;
-- NULL if missing), its state and output (NULL when the job no longer exists). Binds: id.
SELECT d.dep_id, n.step, d.policy, p.state, p.output
FROM {prefix}job_deps AS d
LEFT JOIN {prefix}jobs AS j ON j.id = d.job_id
LEFT JOIN {prefix}workflow_jobs AS n ON n.workflow_id = j.workflow_id AND n.job_id = d.dep_id
LEFT JOIN {prefix}jobs AS p ON p.id = d.dep_id
WHERE d.job_id = ?
ORDER BY d.dep_id
