-- name: job_release
-- Back to pending and due now; the attempt the claim counted is given back.
UPDATE [{schema}].[jobs]
SET state = N'pending', run_at = SYSUTCDATETIME(),
    attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END,
    updated_at = SYSUTCDATETIME(), worker = NULL, lease_token = NULL, lease_expires_at = NULL
WHERE id = CAST(@P1 AS BINARY(16)) AND lease_token = @P2 AND state = N'running'
