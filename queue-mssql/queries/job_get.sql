-- name: job_get
SELECT id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, created_at, updated_at, finished_at, kind, meta, timeout_us, snoozes, errors, output
FROM [{schema}].[jobs]
WHERE id = CAST(@P1 AS BINARY(16))
