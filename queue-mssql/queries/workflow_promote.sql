-- name: workflow_promote
-- Each listed job ({ids} expands to `CAST(@Pn AS BINARY(16))` per id, from @P1) that is still
-- waiting, whose every dependency is resolved (policy 0: completed; policy 1: completed, dead,
-- cancelled or deleted; a deleted dependency of policy 0 is never resolved: workflow_block
-- cancels its dependents) and that is not the callback of an open workflow (batch), becomes pending, due
-- at the later of its run_at and now (no GREATEST before SQL Server 2022: a CASE); OUTPUT
-- returns the jobs promoted with their queues. The row version changes by itself (ROWVERSION).
-- Every other row is read with a locking read of the latest committed rows
-- (READCOMMITTEDLOCK), whatever the isolation level of a caller's transaction and also when
-- READ_COMMITTED_SNAPSHOT is on: the decision is made from committed states only, so that of
-- two dependencies finishing at once, whichever commits last sees the other's end and promotes
-- (a read of a row another transaction is changing waits for its commit).
UPDATE j
SET state = N'pending',
    run_at = CASE WHEN j.run_at > SYSUTCDATETIME() THEN j.run_at ELSE SYSUTCDATETIME() END,
    updated_at = SYSUTCDATETIME()
OUTPUT inserted.id, inserted.queue
FROM [{schema}].[jobs] AS j
WHERE j.id IN ({ids}) AND j.state = N'waiting'
  AND NOT EXISTS (
      SELECT 1
      FROM [{schema}].[job_deps] AS d WITH (READCOMMITTEDLOCK)
      LEFT JOIN [{schema}].[jobs] AS p WITH (READCOMMITTEDLOCK) ON p.id = d.dep_id
      WHERE d.job_id = j.id
        AND NOT (ISNULL(p.state, N'') = N'completed'
                 OR (d.policy = 1 AND (p.id IS NULL OR p.state IN (N'dead', N'cancelled')))))
  AND NOT EXISTS (
      SELECT 1
      FROM [{schema}].[workflows] AS w WITH (READCOMMITTEDLOCK)
      WHERE w.id = j.workflow_id AND w.callback = j.id AND w.[open] = 1)
