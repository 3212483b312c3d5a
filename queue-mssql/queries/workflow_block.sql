-- name: workflow_block
-- Each listed job ({ids} expands to `CAST(@Pn AS BINARY(16))` per id, from @P1) that is still
-- waiting and has a dependency of policy 0 (must complete) that is dead or cancelled, or was
-- deleted (no row joins), becomes cancelled, finished now, blocked_by that dependency (the
-- least id of such, by TOP (1) ... ORDER BY: MIN over BINARY(16) is not a byte-order minimum
-- on every server that speaks T-SQL); OUTPUT returns the jobs cancelled. The row version
-- changes by itself (the jobs table's `version` is a ROWVERSION). A step of a workflow is never
-- unique, so its unique_live is NULL and stays so. The dependency edges are read with locking
-- reads of the latest committed rows (READCOMMITTEDLOCK), and the dependencies' jobs with
-- REPEATABLEREAD, whose shared locks last until this statement's end, whatever the isolation
-- level of a caller's transaction and also when READ_COMMITTED_SNAPSHOT is on: a retry of a
-- dependency that has not committed makes this wait and then read it retried (nothing is
-- cancelled), and a retry that comes later waits for this cancellation, and then finds and
-- reopens what it cancelled.
UPDATE j
SET state = N'cancelled',
    blocked_by = (
        SELECT TOP (1) d.dep_id
        FROM [{schema}].[job_deps] AS d WITH (READCOMMITTEDLOCK)
        LEFT JOIN [{schema}].[jobs] AS p WITH (REPEATABLEREAD, ROWLOCK) ON p.id = d.dep_id
        WHERE d.job_id = j.id AND d.policy = 0
          AND (p.id IS NULL OR p.state IN (N'dead', N'cancelled'))
        ORDER BY d.dep_id),
    finished_at = SYSUTCDATETIME(),
    updated_at = SYSUTCDATETIME()
OUTPUT inserted.id
FROM [{schema}].[jobs] AS j
WHERE j.id IN ({ids}) AND j.state = N'waiting'
  AND EXISTS (
      SELECT 1
      FROM [{schema}].[job_deps] AS d WITH (READCOMMITTEDLOCK)
      LEFT JOIN [{schema}].[jobs] AS p WITH (REPEATABLEREAD, ROWLOCK) ON p.id = d.dep_id
      WHERE d.job_id = j.id AND d.policy = 0
        AND (p.id IS NULL OR p.state IN (N'dead', N'cancelled')))
