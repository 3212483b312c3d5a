-- name: workflow_jobs
-- A workflow's jobs in id order, each with its step name (the columns of job_list).
-- Binds: ?1 workflow id.
SELECT j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.workflow_id, j.blocked_by, n.step
FROM queue_workflow_jobs n
JOIN queue_jobs j ON j.id = n.job_id
WHERE n.workflow_id = ?1
ORDER BY j.id
