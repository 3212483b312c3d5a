-- name: job_get
-- One job with everything stored about it: its error history and output, and, for a step of a
-- workflow, the workflow and its step name (the workflow's row of the job in workflow_jobs, by
-- that table's primary key; NULL for a job pushed alone).
SELECT j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.errors, j.output, j.workflow_id, j.blocked_by, n.step
FROM [{schema}].[jobs] AS j
LEFT JOIN [{schema}].[workflow_jobs] AS n ON n.workflow_id = j.workflow_id AND n.job_id = j.id
WHERE j.id = CAST(@P1 AS BINARY(16))
