-- name: job_get
-- With the job's step name when it is a step of a workflow. Binds: ?1 id.
SELECT j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.errors, j.output, j.workflow_id, j.blocked_by, n.step
FROM queue_jobs j
LEFT JOIN queue_workflow_jobs n ON n.workflow_id = j.workflow_id AND n.job_id = j.id
WHERE j.id = ?1
