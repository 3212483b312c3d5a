-- name: job_complete_many
-- Completes every job of {leases} (expands to `(CAST(@Pn AS BINARY(16)), @Pn+1)` per lease:
-- id, token) whose lease is still current; lost leases simply do not match. A unique job keeps
-- holding its key only when completed (bit 4) is one of its states (see migration 0005).
UPDATE j
SET state = N'completed', finished_at = SYSUTCDATETIME(), updated_at = SYSUTCDATETIME(),
    lease_token = NULL, lease_expires_at = NULL,
    unique_live = CASE WHEN (j.unique_states & 4) <> 0 THEN j.unique_live ELSE NULL END
FROM [{schema}].[jobs] AS j
INNER JOIN (VALUES {leases}) AS l (id, token) ON j.id = l.id AND j.lease_token = l.token
WHERE j.state = N'running'
