-- name: job_ids
-- The ids and queues of the jobs a bulk operation matches, newest first, with job_list's
-- cursor: by id descending (ids are BINARY(16), the UUID v7's bytes in big-endian order, which
-- compare byte by byte: creation order, as Rust orders them). @P1 queue, @P2 kind, @P3 and @P4
-- (created more than @P3 seconds plus @P4 microseconds ago) and @P5 (only ids below it) filter
-- when not NULL; @P6 most rows; {states} (expands to `@P7, ...`) the states. RECOMPILE, as
-- job_list: each combination of filters gets its own plan.
SELECT TOP (@P6) id, queue
FROM [{schema}].[jobs]
WHERE (@P1 IS NULL OR queue = @P1) AND state IN ({states})
  AND (@P2 IS NULL OR kind = @P2)
  AND (@P3 IS NULL
       OR created_at < DATEADD(MICROSECOND, -@P4, DATEADD(SECOND, -@P3, SYSUTCDATETIME())))
  AND (@P5 IS NULL OR id < CAST(@P5 AS BINARY(16)))
ORDER BY id DESC
OPTION (RECOMPILE)
