-- name: job_claim_after
-- job_claim of a queue with a backlog, continuing from the position where its last claim
-- stopped (claim_priority, run_at, id: all ascending in the `claim` index), after the jobs of
-- a higher priority (job_claim_ahead) left the limit unfilled. A claim from the head of the
-- queue walks the index entries of every job claimed before it that purge has not removed yet,
-- and a transaction anywhere in the server that holds an old consistent read view keeps purge
-- from removing any; this one starts where the last stopped. The range is written as three
-- intervals of the index (the position's run_at after its id, the position's priority after
-- its run_at, every lower priority), so each is bounded on all of the index's parts and the
-- entries of the jobs claimed before the position (a batch pushed at once shares one run_at)
-- are not read. The index is named: MariaDB's optimizer otherwise reads the (queue, state)
-- prefix from the head of the queue and filters the position out entry by entry. Values:
-- queue; claim_priority, run_at, id; claim_priority, run_at; claim_priority; controls
-- checked, queue; limit.
SELECT id, queue, payload, priority, attempts, max_attempts, run_at, last_error, dedup_key,
       kind, meta, timeout_us, snoozes, workflow_id, blocked_by, created_at, version,
       UTC_TIMESTAMP(6) AS db_now
FROM {prefix}jobs FORCE INDEX (claim)
WHERE queue = ? AND state = 'pending'
  AND ((claim_priority = ? AND run_at = ? AND id > ?)
       OR (claim_priority = ? AND run_at > ?)
       OR claim_priority > ?)
  AND run_at <= UTC_TIMESTAMP(6)
  AND (? OR NOT EXISTS (
      SELECT 1 FROM {prefix}queues q
      WHERE q.name = ? AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
          OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares)))
ORDER BY claim_priority, run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
