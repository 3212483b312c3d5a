-- name: job_reschedule
-- A pending job's run time (@P2 seconds plus @P3 microseconds from now; NULL keeps it) and
-- priority (@P4; NULL keeps it); returns its queue.
UPDATE [{schema}].[jobs]
SET run_at = CASE WHEN @P2 IS NULL THEN run_at
                  ELSE DATEADD(MICROSECOND, @P3, DATEADD(SECOND, @P2, SYSUTCDATETIME())) END,
    priority = COALESCE(@P4, priority),
    updated_at = SYSUTCDATETIME()
OUTPUT inserted.queue
WHERE id = CAST(@P1 AS BINARY(16)) AND state = N'pending'
