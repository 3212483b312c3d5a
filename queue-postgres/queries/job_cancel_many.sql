-- name: job_cancel_many
-- job_cancel for each job of $1 that is still pending, running or waiting, each looked up by
-- primary key (the states are sub-selects, see job_retry).
UPDATE {schema}.jobs
SET state = 'cancelled', finished_at = now(), updated_at = now(),
    lease_expires_at = NULL, version = version + 1
WHERE id = ANY($1::uuid[]) AND state IN ((SELECT 'pending'), (SELECT 'running'), (SELECT 'waiting'))
