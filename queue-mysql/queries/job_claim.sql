-- name: job_claim
-- ORDER BY claim_priority (= -priority) is `priority DESC` as an ascending scan of index `claim`.
-- SkipLocked claim, step 1 (READ COMMITTED transaction): lock the due rows nobody else holds and
-- read every column the claimed job needs, plus the database's now, read once and reused.
-- Binds: queue, controls checked, queue, limit. Nothing is claimed while the queue's row in
-- `queues` says paused, limited or keyed (a key limit or fair shares), unless the caller holds that row's lock and applied the
-- controls itself. The subquery is a consistent read: the locking clause of the outer query does
-- not lock (or skip) the rows of a subquery, so a controlled claim holding the row does not make
-- it invisible here.
SELECT id, queue, payload, priority, attempts, max_attempts, run_at, last_error, dedup_key,
       kind, meta, timeout_us, snoozes, workflow_id, blocked_by, created_at, version,
       UTC_TIMESTAMP(6) AS db_now
FROM {prefix}jobs
WHERE queue = ? AND state = 'pending' AND run_at <= UTC_TIMESTAMP(6)
  AND (? OR NOT EXISTS (
      SELECT 1 FROM {prefix}queues q
      WHERE q.name = ? AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
          OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares)))
ORDER BY claim_priority, run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
