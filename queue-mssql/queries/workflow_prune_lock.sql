-- name: workflow_prune_lock
-- Retention, in a transaction of the driver's: up to @P5 workflows created more than @P1
-- seconds plus @P2 microseconds ago, after (@P3, @P4) in (created_at, id) order, in that order,
-- along workflows_created_idx (FORCESEEK), with update locks, skipping rows another transaction
-- holds (UPDLOCK, READPAST; READCOMMITTEDLOCK so that READPAST is allowed when
-- READ_COMMITTED_SNAPSHOT is on): a retry or a batch_add of a workflow holds its row
-- (workflow_lock), and it is looked at in a later round.
SELECT TOP (@P5) w.id, w.created_at
FROM [{schema}].[workflows] AS w WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK, FORCESEEK)
WHERE w.created_at < DATEADD(MICROSECOND, -@P2, DATEADD(SECOND, -@P1, SYSUTCDATETIME()))
  AND (w.created_at > @P3 OR (w.created_at = @P3 AND w.id > CAST(@P4 AS BINARY(16))))
ORDER BY w.created_at, w.id
