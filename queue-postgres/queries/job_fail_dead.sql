-- name: job_fail_dead
-- The state is compared with `(SELECT 'running')` so that the plan looks the id up by primary
-- key and never scans the partial lease index (see job_complete_many).
UPDATE {schema}.jobs
SET state = 'dead', finished_at = now(), last_error = $3, updated_at = now(),
    lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
