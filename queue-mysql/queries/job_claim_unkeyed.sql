-- name: job_claim_unkeyed
-- job_claim_key for the jobs of a queue without a concurrency key. They are not in key_claim
-- (pending_key is NULL): this walks index `claim` past the keyed ones, which is why the engine
-- looks for them at most once a second per process while it last found none. Step 2 is
-- job_claim_update. Binds: queue, limit.
SELECT id, queue, payload, priority, attempts, max_attempts, run_at, last_error, dedup_key,
       kind, meta, timeout_us, snoozes, workflow_id, blocked_by, created_at, version,
       UTC_TIMESTAMP(6) AS db_now
FROM {prefix}jobs
WHERE queue = ? AND state = 'pending' AND concurrency_key IS NULL AND run_at <= UTC_TIMESTAMP(6)
ORDER BY claim_priority, run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
