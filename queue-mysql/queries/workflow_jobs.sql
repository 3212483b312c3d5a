-- name: workflow_jobs
-- A workflow's jobs in id order, with job_list's columns and each job's step name: a range of
-- workflow_jobs' primary key (workflow_id, job_id), then each job by primary key (a job that
-- was deleted is left out). Binds: workflow id.
SELECT j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at,
       j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.kind, j.meta, j.timeout_us,
       j.snoozes, NULL AS errors, NULL AS output, j.workflow_id, j.blocked_by, n.step,
       j.created_at, j.updated_at, j.finished_at
FROM {prefix}workflow_jobs AS n
JOIN {prefix}jobs AS j ON j.id = n.job_id
WHERE n.workflow_id = ?
ORDER BY n.job_id
