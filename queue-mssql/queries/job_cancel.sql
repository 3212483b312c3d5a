-- name: job_cancel
-- Keeps lease_token, so the holder's next transition finds the job cancelled under its token.
UPDATE [{schema}].[jobs]
SET state = N'cancelled', finished_at = SYSUTCDATETIME(), updated_at = SYSUTCDATETIME(),
    lease_expires_at = NULL
WHERE id = CAST(@P1 AS BINARY(16)) AND state IN (N'pending', N'running')
