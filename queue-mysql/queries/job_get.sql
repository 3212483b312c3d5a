-- name: job_get
SELECT id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_expires_at,
       worker, last_error, dedup_key, kind, meta, timeout_us, snoozes, errors, output, created_at,
       updated_at, finished_at
FROM {prefix}jobs
WHERE id = ?
