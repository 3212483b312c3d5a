-- name: job_extend
-- The new expiry is computed from the database's now (read just before) and bound, so the
-- returned lease carries exactly the stored value.
UPDATE {prefix}jobs
SET lease_expires_at = ?,
    updated_at = ?,
    version = version + 1
WHERE id = ? AND lease_token = ? AND state = 'running'
