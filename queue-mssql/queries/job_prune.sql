-- name: job_prune
-- Deletes at most @P4 jobs in the states {states} (expands to `@P5, ...`) that finished more
-- than @P1 seconds plus @P2 microseconds ago; only queue @P3 when not NULL. The literal list of
-- finished states beside the bound one lets the filtered index jobs_finished_idx serve it. The
-- engine repeats it until fewer are deleted. Jobs of workflows are left: they go a whole
-- workflow at a time (workflow_prune).
DELETE TOP (@P4) FROM [{schema}].[jobs]
WHERE state IN ({states}) AND state IN (N'completed', N'dead', N'cancelled')
  AND finished_at < DATEADD(MICROSECOND, -@P2, DATEADD(SECOND, -@P1, SYSUTCDATETIME()))
  AND (@P3 IS NULL OR queue = @P3)
  AND workflow_id IS NULL
