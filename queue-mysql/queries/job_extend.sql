-- name: job_extend
-- job_extend, step 2: the new expiry, computed from the time read by step 1 under the row's
-- lock and bound, so the returned lease carries exactly the stored value.
UPDATE {prefix}jobs
SET lease_expires_at = ?,
    updated_at = ?,
    version = version + 1
WHERE id = ? AND lease_token = ? AND state = 'running'
