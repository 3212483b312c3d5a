-- name: job_fail_dead
UPDATE {schema}.jobs
SET state = 'dead', finished_at = now(), last_error = $3, updated_at = now(),
    lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = 'running'
