-- name: job_claim_after
-- job_claim of a queue with a backlog, continuing from the position where its last claim
-- stopped (claim_priority, run_at, id: all ascending in the `claim` index), after the jobs of
-- a higher priority (job_claim_ahead) left the limit unfilled. A claim from the head of the
-- queue walks the index entries of every job claimed before it that purge has not removed yet,
-- and a transaction anywhere in the server that holds an old consistent read view keeps purge
-- from removing any; this one starts where the last stopped. The range is written as two
-- intervals of the index (the position's priority from its run_at on, and every lower
-- priority) so that it is read as one range in index order; the jobs at the position's run_at
-- up to its id are filtered out. Values: queue; claim_priority, run_at, claim_priority;
-- claim_priority, run_at, id; controls checked, queue; limit.
SELECT id, queue, payload, priority, attempts, max_attempts, run_at, last_error, dedup_key,
       kind, meta, timeout_us, snoozes, workflow_id, blocked_by, created_at, version,
       UTC_TIMESTAMP(6) AS db_now
FROM {prefix}jobs
WHERE queue = ? AND state = 'pending'
  AND ((claim_priority = ? AND run_at >= ?) OR claim_priority > ?)
  AND NOT (claim_priority = ? AND run_at = ? AND id <= ?)
  AND run_at <= UTC_TIMESTAMP(6)
  AND (? OR NOT EXISTS (
      SELECT 1 FROM {prefix}queues q
      WHERE q.name = ? AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
          OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares)))
ORDER BY claim_priority, run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
