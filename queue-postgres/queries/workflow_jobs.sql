-- name: workflow_jobs
-- Workflow $1's jobs in id order (the columns of job_list), each with its step name: a range
-- of workflow_jobs' primary key, already in job id order, and each job looked up by id.
SELECT j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.workflow_id, j.blocked_by, n.step
FROM {schema}.workflow_jobs n
JOIN {schema}.jobs j ON j.id = n.job_id
WHERE n.workflow_id = $1
ORDER BY n.job_id
