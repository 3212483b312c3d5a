-- name: JobList
-- Newest first. Binds: ?1 queue or NULL, ?2 state or NULL, ?3 limit.
SELECT id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, created_at, updated_at, finished_at
FROM queue_jobs
WHERE (?1 IS NULL OR queue = ?1) AND (?2 IS NULL OR state = ?2)
ORDER BY created_at DESC, id DESC
LIMIT ?3
