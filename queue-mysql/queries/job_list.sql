-- name: JobList
-- Newest first; each filter is optional (a NULL binding disables it).
SELECT id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_expires_at,
       worker, last_error, dedup_key, created_at, updated_at, finished_at
FROM {prefix}jobs
WHERE (? IS NULL OR queue = ?) AND (? IS NULL OR state = ?)
ORDER BY created_at DESC, id DESC
LIMIT ?
