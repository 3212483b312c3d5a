-- name: job_get
-- Binds: ?1 id.
SELECT id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, created_at, updated_at, finished_at, kind, meta, timeout_us, snoozes, errors, output
FROM queue_jobs WHERE id = ?1
