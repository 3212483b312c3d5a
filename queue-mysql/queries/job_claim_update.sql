-- name: job_claim_update
-- SkipLocked claim, step 2: lease the rows locked by step 1. Each row gets its own token:
-- {token_cases} expands to `WHEN ? THEN ?` per row and {ids} to `?, ?, ...` (placeholders only).
-- Assignments run left to right on MySQL and MariaDB; none reads a column assigned before it.
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
WHERE id IN ({ids}) AND state = 'pending'
