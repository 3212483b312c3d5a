-- name: job_claim_ahead
-- The first step of a claim that continues from a position (job_claim_after): the due jobs of
-- queue ? of a higher priority than the position's (claim_priority below ?), which come first
-- whatever the position, read from the head of the queue, and run only when job_claim_ahead_any
-- finds one. The index is named so that the range ends at the position's priority: MariaDB's
-- optimizer otherwise reads the (queue, state) prefix and filters by priority entry by entry,
-- on through the whole backlog when fewer jobs than the limit come first. Otherwise as
-- job_claim: values queue, claim_priority, controls checked, queue, limit.
SELECT id, queue, payload, priority, attempts, max_attempts, run_at, last_error, dedup_key,
       kind, meta, timeout_us, snoozes, workflow_id, blocked_by, created_at, version,
       UTC_TIMESTAMP(6) AS db_now
FROM {prefix}jobs FORCE INDEX (claim)
WHERE queue = ? AND state = 'pending' AND claim_priority < ? AND run_at <= UTC_TIMESTAMP(6)
  AND (? OR NOT EXISTS (
      SELECT 1 FROM {prefix}queues q
      WHERE q.name = ? AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
          OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares)))
ORDER BY claim_priority, run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
