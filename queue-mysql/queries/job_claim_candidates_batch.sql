-- name: job_claim_candidates_batch
-- Optimistic claim of several candidates in one autocommit statement: each row is claimed only
-- if its version is still the one read. {token_cases} and {version_cases} expand to
-- `WHEN ? THEN ?` per row, {ids} to `?, ?, ...`. The WHERE clause sees the versions as read
-- (before SET). The last bind is the queue: nothing is claimed while its row in `queues` says
-- paused, limited or keyed. Which rows were won is learned from job_claim_candidates_tokens when not all were.
-- FORCE INDEX (PRIMARY): lock by primary key first, in key order, like every other transition,
-- even when the optimizer would rather scan a small range of a secondary index (deadlocks).
UPDATE {prefix}jobs FORCE INDEX (PRIMARY)
SET lease_token = CASE id {token_cases} END,
    lease_expires_at = ?,
    worker = ?,
    attempts = attempts + 1,
    version = version + 1,
    updated_at = ?,
    state = 'running'
WHERE id IN ({ids})
  AND state = 'pending'
  AND version = CASE id {version_cases} END
  AND NOT EXISTS (
      SELECT 1 FROM {prefix}queues q
      WHERE q.name = ? AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
          OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares))
