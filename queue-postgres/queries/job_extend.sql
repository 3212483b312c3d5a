-- name: job_extend
-- Moves the lease's expiry to $3 microseconds from now.
UPDATE {schema}.jobs
SET lease_expires_at = now() + $3::bigint * interval '1 microsecond',
    updated_at = now(), version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = 'running'
RETURNING lease_expires_at
