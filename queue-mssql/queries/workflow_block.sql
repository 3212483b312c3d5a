-- name: workflow_block
-- Each listed job ({ids} expands to `CAST(@Pn AS BINARY(16))` per id, from @P1) that is still
-- waiting and has a dependency of policy 0 (must complete) that is dead or cancelled becomes
-- cancelled, finished now, blocked_by that dependency (the least id of such: any one is a
-- correct cause); OUTPUT returns the jobs cancelled. The row version changes by itself (the
-- jobs table's `version` is a ROWVERSION). A step of a workflow is never unique, so its
-- unique_live is NULL and stays so. The dependencies are read with locking reads of the latest
-- committed rows (READCOMMITTEDLOCK), whatever the isolation level of a caller's transaction
-- and also when READ_COMMITTED_SNAPSHOT is on: the decision is made from committed states only.
UPDATE j
SET state = N'cancelled',
    blocked_by = (
        SELECT MIN(d.dep_id)
        FROM [{schema}].[job_deps] AS d WITH (READCOMMITTEDLOCK)
        INNER JOIN [{schema}].[jobs] AS p WITH (READCOMMITTEDLOCK) ON p.id = d.dep_id
        WHERE d.job_id = j.id AND d.policy = 0 AND p.state IN (N'dead', N'cancelled')),
    finished_at = SYSUTCDATETIME(),
    updated_at = SYSUTCDATETIME()
OUTPUT inserted.id
FROM [{schema}].[jobs] AS j
WHERE j.id IN ({ids}) AND j.state = N'waiting'
  AND EXISTS (
      SELECT 1
      FROM [{schema}].[job_deps] AS d WITH (READCOMMITTEDLOCK)
      INNER JOIN [{schema}].[jobs] AS p WITH (READCOMMITTEDLOCK) ON p.id = d.dep_id
      WHERE d.job_id = j.id AND d.policy = 0 AND p.state IN (N'dead', N'cancelled'))
