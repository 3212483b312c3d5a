-- name: job_claim_candidates
-- Optimistic claim, step 2, of one candidate: claim it if nobody changed it since it was read.
-- One row changed = claimed.
UPDATE {prefix}jobs
SET lease_token = ?,
    lease_expires_at = ?,
    worker = ?,
    attempts = attempts + 1,
    version = version + 1,
    updated_at = ?,
    state = 'running'
WHERE id = ? AND version = ? AND state = 'pending'
