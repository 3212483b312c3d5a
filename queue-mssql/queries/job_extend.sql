-- name: job_extend
-- Moves the lease's expiry to @P3 seconds plus @P4 microseconds from now; OUTPUT returns the
-- expiry exactly as stored (DATETIME2(6)), so the new lease carries the stored value.
UPDATE [{schema}].[jobs]
SET lease_expires_at = DATEADD(MICROSECOND, @P4, DATEADD(SECOND, @P3, SYSUTCDATETIME())),
    updated_at = SYSUTCDATETIME()
OUTPUT inserted.lease_expires_at
WHERE id = CAST(@P1 AS BINARY(16)) AND lease_token = @P2 AND state = N'running'
