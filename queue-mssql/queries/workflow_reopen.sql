-- name: workflow_reopen
-- In the retry's transaction: the jobs that were cancelled because one of the listed jobs
-- ended dead or cancelled (or was deleted), now retried ({ids} expands to `CAST(@Pn AS BINARY(16))` per id, from @P1), wait again: no cause,
-- not finished; OUTPUT returns them. The row version changes by itself (ROWVERSION). They are
-- found through job_deps' primary key (dep_id first): jobs has no index on blocked_by, and a
-- retry of a job nothing depends on costs one seek.
UPDATE j
SET state = N'waiting', blocked_by = NULL, finished_at = NULL, updated_at = SYSUTCDATETIME()
OUTPUT inserted.id
FROM [{schema}].[jobs] AS j
WHERE j.id IN (SELECT d.job_id FROM [{schema}].[job_deps] AS d WHERE d.dep_id IN ({ids}))
  AND j.state = N'cancelled' AND j.blocked_by IN ({ids})
