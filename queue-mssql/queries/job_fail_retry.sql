-- name: job_fail_retry
-- Back to pending, due @P3 seconds plus @P4 microseconds from now, the failure recorded in
-- last_error (@P5); no one holds it now, so the worker is cleared.
UPDATE [{schema}].[jobs]
SET state = N'pending',
    run_at = DATEADD(MICROSECOND, @P4, DATEADD(SECOND, @P3, SYSUTCDATETIME())),
    last_error = @P5, updated_at = SYSUTCDATETIME(), worker = NULL,
    lease_token = NULL, lease_expires_at = NULL
WHERE id = CAST(@P1 AS BINARY(16)) AND lease_token = @P2 AND state = N'running'
