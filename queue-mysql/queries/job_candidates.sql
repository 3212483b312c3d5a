-- name: job_candidates
-- ORDER BY claim_priority (= -priority) is `priority DESC` as an ascending scan of index `claim`.
-- Optimistic claim, step 1: read due rows without locks, with their versions.
SELECT id, queue, payload, priority, attempts, max_attempts, run_at, last_error, dedup_key,
       kind, meta, timeout_us, snoozes, workflow_id, blocked_by, created_at, version,
       UTC_TIMESTAMP(6) AS db_now
FROM {prefix}jobs
WHERE queue = ? AND state = 'pending' AND run_at <= UTC_TIMESTAMP(6)
ORDER BY claim_priority, run_at, id
LIMIT ?
