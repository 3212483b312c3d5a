-- name: job_claim_key
-- Claims up to ?5 due pending jobs of queue ?1 whose concurrency key is ?6, in claim order
-- (queue_jobs_key gives them in that order), inside the engine's keyed claim (its transaction
-- holds the write lock). Binds ?1..?5 as job_claim; the lease runs from SQLite's clock as there.
UPDATE queue_jobs
SET state = 'running',
    attempts = attempts + 1,
    lease_token = randomblob(16),
    lease_expires_at = CAST(unixepoch('subsec') * 1000000 AS INTEGER) + ?3,
    worker = ?4,
    version = version + 1,
    updated_at = ?2
WHERE rowid IN (
    SELECT rowid FROM queue_jobs INDEXED BY queue_jobs_key
    WHERE queue = ?1 AND state = 'pending' AND concurrency_key = ?6 AND run_at <= ?2
    ORDER BY priority DESC, run_at, id
    LIMIT ?5
)
RETURNING id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, created_at, updated_at, finished_at, kind, meta, timeout_us, snoozes, workflow_id, blocked_by
