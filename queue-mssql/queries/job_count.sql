-- name: job_count
-- How many jobs a bulk operation matches, as job_ids: @P1 queue, @P2 kind, @P3 and @P4 (created
-- more than @P3 seconds plus @P4 microseconds ago) filter when not NULL; {states} (expands to
-- `@P5, ...`) the states.
SELECT COUNT_BIG(*) AS n
FROM [{schema}].[jobs]
WHERE (@P1 IS NULL OR queue = @P1) AND state IN ({states})
  AND (@P2 IS NULL OR kind = @P2)
  AND (@P3 IS NULL
       OR created_at < DATEADD(MICROSECOND, -@P4, DATEADD(SECOND, -@P3, SYSUTCDATETIME())))
OPTION (RECOMPILE)
