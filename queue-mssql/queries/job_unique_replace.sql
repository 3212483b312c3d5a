-- name: job_unique_replace
-- A unique push in replace mode met the pending job @P1, which takes the push's payload (@P2),
-- priority (@P3) and run time (@P4 seconds plus @P5 microseconds from now); a job that is no
-- longer pending is left alone (no row changed). Its key and states stay; the row version
-- changes by itself (rowversion), as every update changes it.
UPDATE [{schema}].[jobs]
SET payload = @P2, priority = @P3,
    run_at = DATEADD(MICROSECOND, @P5, DATEADD(SECOND, @P4, SYSUTCDATETIME())),
    updated_at = SYSUTCDATETIME()
WHERE id = CAST(@P1 AS BINARY(16)) AND state = N'pending'
