-- name: job_expired
-- Running jobs whose lease expired (the filtered index jobs_lease_idx covers this), at most
-- @P1, for the engine to decide on.
SELECT TOP (@P1) id, lease_token, queue, attempts, max_attempts
FROM [{schema}].[jobs]
WHERE state = N'running' AND lease_expires_at < SYSUTCDATETIME()
ORDER BY lease_expires_at
