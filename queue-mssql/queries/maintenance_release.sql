-- name: maintenance_release
-- The round of task @P1 under token @P2 is over: the next is due @P3 seconds plus @P4
-- microseconds from now. A round whose lease ran out and was taken by another process changes
-- nothing.
UPDATE [{schema}].[maintenance]
SET token = NULL, next_at = DATEADD(MICROSECOND, @P4, DATEADD(SECOND, @P3, SYSUTCDATETIME()))
WHERE task = @P1 AND token = @P2
