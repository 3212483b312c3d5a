-- name: job_list
-- Newest first by id (ids are time-ordered); each filter is optional (a NULL binding disables
-- it): queue, state, kind, and only ids below a cursor. A job's history and output are read by
-- job_get alone (they can be large), and so is a workflow job's step.
SELECT id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_expires_at,
       worker, last_error, dedup_key, kind, meta, timeout_us, snoozes, NULL AS errors,
       NULL AS output, workflow_id, blocked_by, NULL AS step, created_at, updated_at, finished_at
FROM {prefix}jobs
WHERE (? IS NULL OR queue = ?) AND (? IS NULL OR state = ?) AND (? IS NULL OR kind = ?)
  AND (? IS NULL OR id < ?)
ORDER BY id DESC
LIMIT ?
