-- name: JobRetry
UPDATE {schema}.jobs
SET state = 'pending', attempts = 0, run_at = now(), finished_at = NULL, updated_at = now(),
    lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND state IN ('dead', 'cancelled')
RETURNING queue
