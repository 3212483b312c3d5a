-- name: job_claim_candidates
-- Optimistic claim, step 2, of one candidate: claim it if nobody changed it since it was read.
-- One row changed = claimed. The last bind is the queue: nothing is claimed while its row in
-- `queues` says paused, limited or keyed (the read took no lock, so the check is made here).
UPDATE {prefix}jobs
SET lease_token = ?,
    lease_expires_at = ?,
    worker = ?,
    attempts = attempts + 1,
    version = version + 1,
    updated_at = ?,
    state = 'running'
WHERE id = ? AND version = ? AND state = 'pending'
  AND NOT EXISTS (
      SELECT 1 FROM {prefix}queues q
      WHERE q.name = ? AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
          OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares))
