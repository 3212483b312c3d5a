-- name: job_fail_dead
UPDATE [{schema}].[jobs]
SET state = N'dead', finished_at = SYSUTCDATETIME(), last_error = @P3,
    updated_at = SYSUTCDATETIME(), lease_token = NULL, lease_expires_at = NULL
WHERE id = CAST(@P1 AS BINARY(16)) AND lease_token = @P2 AND state = N'running'
