-- name: workflow_block
-- Each listed job ({ids} expands to `CAST(@Pn AS BINARY(16))` per id, from @P1) that is still
-- waiting and has a dependency of policy 0 (must complete) that is dead or cancelled, or was
-- deleted (no row joins), becomes cancelled, finished now, blocked_by that dependency (the
-- least id of such, by TOP (1) ... ORDER BY: MIN over BINARY(16) is not a byte-order minimum
-- on every server that speaks T-SQL); OUTPUT returns the jobs cancelled. The row version
-- changes by itself (the jobs table's `version` is a ROWVERSION). A step of a workflow is never
-- unique, so its unique_live is NULL and stays so.
-- Two statements in one request. @blocked: each waiting job with the dependency that blocks
-- it, read as committed (READCOMMITTEDLOCK, whatever the isolation level of a caller's
-- transaction and also when READ_COMMITTED_SNAPSHOT is on), without holding locks. Then the
-- update, which reads that dependency again WITH (REPEATABLEREAD): its shared lock lasts to the
-- statement's end and covers only the dependencies found dead or cancelled (never a live one,
-- whose claims and completions would otherwise wait), so a retry of it that has not committed
-- makes this wait and then read it retried (nothing is cancelled), and a retry that comes later
-- waits for the cancellation, then finds and reopens what it cancelled.
DECLARE @blocked TABLE (id BINARY(16) NOT NULL PRIMARY KEY, dep BINARY(16) NOT NULL);
INSERT INTO @blocked (id, dep)
SELECT x.id, x.dep
FROM (
    SELECT j.id,
           (SELECT TOP (1) d.dep_id
            FROM [{schema}].[job_deps] AS d WITH (READCOMMITTEDLOCK)
            LEFT JOIN [{schema}].[jobs] AS p WITH (READCOMMITTEDLOCK) ON p.id = d.dep_id
            WHERE d.job_id = j.id AND d.policy = 0
              AND (p.id IS NULL OR p.state IN (N'dead', N'cancelled'))
            ORDER BY d.dep_id) AS dep
    FROM [{schema}].[jobs] AS j WITH (READCOMMITTEDLOCK)
    WHERE j.id IN ({ids}) AND j.state = N'waiting'
) AS x
WHERE x.dep IS NOT NULL;
UPDATE j
SET state = N'cancelled',
    blocked_by = b.dep,
    finished_at = SYSUTCDATETIME(),
    updated_at = SYSUTCDATETIME()
OUTPUT inserted.id
FROM [{schema}].[jobs] AS j
INNER JOIN @blocked AS b ON b.id = j.id
WHERE j.state = N'waiting'
  AND (EXISTS (SELECT 1 FROM [{schema}].[jobs] AS p WITH (REPEATABLEREAD, ROWLOCK)
               WHERE p.id = b.dep AND p.state IN (N'dead', N'cancelled'))
       OR NOT EXISTS (SELECT 1 FROM [{schema}].[jobs] AS g WITH (READCOMMITTEDLOCK)
                      WHERE g.id = b.dep));
