-- name: job_get
-- Read from jobs_all: a finished job may be in jobs_done (finished partitions).
-- One job ($1), with its error history and output, and its step name in its workflow (NULL for
-- a job pushed alone; workflow_jobs' primary key finds it).
SELECT j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.workflow_id, j.blocked_by, j.errors, j.output, n.step
FROM {schema}.jobs_all j
LEFT JOIN {schema}.workflow_jobs n ON n.workflow_id = j.workflow_id AND n.job_id = j.id
WHERE j.id = $1
