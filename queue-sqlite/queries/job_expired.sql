-- name: job_expired
-- Running jobs whose lease expired (index queue_jobs_lease). Binds: ?1 now, ?2 limit.
SELECT id, lease_token, queue, attempts, max_attempts FROM queue_jobs
WHERE state = 'running' AND lease_expires_at < ?1
ORDER BY lease_expires_at
LIMIT ?2
