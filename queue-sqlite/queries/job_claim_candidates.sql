-- name: job_claim_candidates
-- The optimistic claim's write, once per candidate inside one BEGIN IMMEDIATE transaction:
-- claims the job if nobody changed it since it was read.
-- Binds: ?1 id, ?2 version, ?3 lease_token, ?4 now, ?5 lease in microseconds, ?6 worker. The
-- lease runs from SQLite's clock read under the write lock (see job_claim). ?7 queue: nothing is
-- claimed while its row in queue_queues says paused or limited.
UPDATE queue_jobs
SET state = 'running',
    attempts = attempts + 1,
    lease_token = ?3,
    lease_expires_at = CAST(unixepoch('subsec') * 1000000 AS INTEGER) + ?5,
    worker = ?6,
    version = version + 1,
    updated_at = ?4
WHERE id = ?1 AND version = ?2 AND state = 'pending'
  AND NOT EXISTS (
      SELECT 1 FROM queue_queues q
      WHERE q.name = ?7 AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
              OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares))
RETURNING id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, created_at, updated_at, finished_at, kind, meta, timeout_us, snoozes, workflow_id, blocked_by
