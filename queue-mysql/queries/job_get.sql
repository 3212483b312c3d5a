-- name: job_get
-- One job, whole, and its step name when it is a step of a workflow (a primary-key lookup in
-- workflow_jobs; NULL otherwise). Binds: id.
SELECT j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at,
       j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.kind, j.meta, j.timeout_us,
       j.snoozes, j.errors, j.output, j.workflow_id, j.blocked_by, n.step, j.created_at,
       j.updated_at, j.finished_at
FROM {prefix}jobs AS j
LEFT JOIN {prefix}workflow_jobs AS n ON n.workflow_id = j.workflow_id AND n.job_id = j.id
WHERE j.id = ?
