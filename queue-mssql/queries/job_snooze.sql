-- name: job_snooze
-- Back to pending, due @P3 seconds plus @P4 microseconds from now, the attempt given back and
-- the snooze counted, while the job has snoozed fewer than @P5 times (a NULL count is 0); no
-- one holds it now, so the worker is cleared.
UPDATE [{schema}].[jobs]
SET state = N'pending',
    run_at = DATEADD(MICROSECOND, @P4, DATEADD(SECOND, @P3, SYSUTCDATETIME())),
    attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END,
    snoozes = COALESCE(snoozes, 0) + 1,
    updated_at = SYSUTCDATETIME(), worker = NULL, lease_token = NULL, lease_expires_at = NULL
WHERE id = CAST(@P1 AS BINARY(16)) AND lease_token = @P2 AND state = N'running'
  AND COALESCE(snoozes, 0) < @P5
