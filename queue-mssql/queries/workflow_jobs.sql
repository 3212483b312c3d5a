-- name: workflow_jobs
-- The jobs of workflow @P1 in id order (push order), each with its step name: job_list's
-- columns (no history, no output), found through workflow_jobs' primary key (workflow first).
-- A job that was deleted has no row.
SELECT j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.workflow_id, j.blocked_by, n.step
FROM [{schema}].[jobs] AS j
INNER JOIN [{schema}].[workflow_jobs] AS n
    ON n.job_id = j.id AND n.workflow_id = CAST(@P1 AS BINARY(16))
ORDER BY j.id
