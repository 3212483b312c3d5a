-- name: job_list
-- Newest first by id (ids are time-ordered, and BLOBs compare byte by byte). The cursor is a
-- plain `id < ?` (with no cursor, below the largest possible id), so SQLite seeks the primary
-- key instead of scanning it: an `?3 IS NULL OR ...` would hide the range from the planner.
-- Binds: ?1 queue or NULL, ?2 state or NULL, ?3 only ids below it or NULL, ?4 limit, ?5 kind
-- or NULL.
-- A job's history and output are read by job_get alone (they can be large).
SELECT id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, created_at, updated_at, finished_at, kind, meta, timeout_us, snoozes, workflow_id, blocked_by
FROM queue_jobs
WHERE (?1 IS NULL OR queue = ?1) AND (?2 IS NULL OR state = ?2) AND (?5 IS NULL OR kind = ?5)
  AND id < COALESCE(?3, X'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF')
ORDER BY id DESC
LIMIT ?4
