-- name: job_expired
-- Running jobs whose lease expired (index jobs_lease_idx), for the engine to decide on.
SELECT id, lease_token, queue, attempts, max_attempts FROM {schema}.jobs
WHERE state = 'running' AND lease_expires_at < now()
ORDER BY lease_expires_at
LIMIT $1
