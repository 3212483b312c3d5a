-- name: job_claim
-- Claims up to ?5 due pending jobs of queue ?1 in claim order, in one statement, under the
-- database's write lock. Binds: ?1 queue, ?2 now, ?3 lease in microseconds, ?4 worker, ?5 limit.
-- The lease runs from SQLite's clock read while the statement holds the write lock (millisecond
-- resolution), not from ?2: a claim that waited for the lock (another process's write, or this
-- queue's own writes queued on its one writer connection) must not hand out a lease that is
-- already partly, or wholly, spent.
-- Each claimed row gets its own new lease token, 16 random bytes made by SQLite (a token is
-- only ever compared for equality), returned with the row.
-- Nothing is claimed while the queue's row in queue_queues says paused or limited, unless ?6
-- (the caller's transaction read that row and applied the controls itself).
UPDATE queue_jobs
SET state = 'running',
    attempts = attempts + 1,
    lease_token = randomblob(16),
    lease_expires_at = CAST(unixepoch('subsec') * 1000000 AS INTEGER) + ?3,
    worker = ?4,
    version = version + 1,
    updated_at = ?2
WHERE rowid IN (
    SELECT rowid FROM queue_jobs
    WHERE queue = ?1 AND state = 'pending' AND run_at <= ?2
      AND (?6 OR NOT EXISTS (
          SELECT 1 FROM queue_queues q
          WHERE q.name = ?1 AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
              OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares)))
    ORDER BY priority DESC, run_at, id
    LIMIT ?5
)
RETURNING id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, created_at, updated_at, finished_at, kind, meta, timeout_us, snoozes, workflow_id, blocked_by
