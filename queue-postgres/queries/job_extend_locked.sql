-- name: job_extend_locked
-- job_extend, step 2, once job_extend_lock holds the row: the expiry is $3 microseconds from
-- the start of this statement (statement_timestamp() is stable, unlike clock_timestamp(), and
-- this statement starts after the lock was granted, so the lease is not born partly spent).
-- The state is compared with `(SELECT 'running')` so that the plan looks the id up by primary
-- key and never scans the partial lease index (see job_complete_many).
UPDATE {schema}.jobs
SET lease_expires_at = statement_timestamp() + $3::bigint * interval '1 microsecond',
    updated_at = now(), version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
RETURNING lease_expires_at
