-- name: job_claim_unkeyed
-- job_claim_key for the jobs of queue ?1 without a concurrency key. They are not in
-- queue_jobs_key: this walks queue_jobs_claim past the keyed ones, which is why the engine
-- looks for them at most once a second per process while it last found none.
UPDATE queue_jobs
SET state = 'running',
    attempts = attempts + 1,
    lease_token = randomblob(16),
    lease_expires_at = CAST(unixepoch('subsec') * 1000000 AS INTEGER) + ?3,
    worker = ?4,
    version = version + 1,
    updated_at = ?2
WHERE rowid IN (
    SELECT rowid FROM queue_jobs INDEXED BY queue_jobs_claim
    WHERE queue = ?1 AND state = 'pending' AND concurrency_key IS NULL AND run_at <= ?2
    ORDER BY priority DESC, run_at, id
    LIMIT ?5
)
RETURNING id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, created_at, updated_at, finished_at, kind, meta, timeout_us, snoozes, workflow_id, blocked_by
