-- name: job_extend
-- Moves the lease's expiry to $3 microseconds from now. The row is locked first, in its own
-- step, and the expiry is read from clock_timestamp() after that: an UPDATE that waits for a
-- row lock keeps the values it computed before the wait, so a lease extended after waiting
-- would be born partly (or wholly) spent.
-- The state is compared with `(SELECT 'running')` so that the plan looks the id up by primary
-- key and never scans the partial lease index (see job_complete_many).
WITH l AS MATERIALIZED (
    SELECT id FROM {schema}.jobs
    WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
    FOR UPDATE
)
UPDATE {schema}.jobs j
SET lease_expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond',
    updated_at = now(), version = j.version + 1
FROM l
WHERE j.id = l.id
RETURNING j.lease_expires_at
