-- name: job_list
-- Newest first by id (ids are time-ordered and stored as big-endian bytes); @P1 queue, @P2
-- state, @P5 kind and @P3 (only ids below it) filter when not NULL; @P4 most rows. RECOMPILE: each
-- combination of filters gets its own plan.
-- A job's history and output are read by job_get alone (they can be large).
SELECT TOP (@P4) id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, created_at, updated_at, finished_at, kind, meta, timeout_us, snoozes, workflow_id, blocked_by
FROM [{schema}].[jobs]
WHERE (@P1 IS NULL OR queue = @P1) AND (@P2 IS NULL OR state = @P2)
  AND (@P5 IS NULL OR kind = @P5)
  AND (@P3 IS NULL OR id < CAST(@P3 AS BINARY(16)))
ORDER BY id DESC
OPTION (RECOMPILE)
