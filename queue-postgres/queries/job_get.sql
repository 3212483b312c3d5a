-- name: job_get
SELECT j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.errors, j.output
FROM {schema}.jobs j
WHERE j.id = $1
