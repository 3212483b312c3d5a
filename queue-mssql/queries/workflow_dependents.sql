-- name: workflow_dependents
-- The waiting jobs that depend on any of the listed jobs, which finished ({ids} expands to
-- `CAST(@Pn AS BINARY(16))` per id, from @P1): each dependency found by job_deps' primary key
-- (dep_id first), each job by its own. A locking read of the latest committed rows
-- (READCOMMITTEDLOCK): also inside a caller's transaction, whatever its isolation level, and
-- when READ_COMMITTED_SNAPSHOT is on, so that a job that waits is never missed because this
-- read saw an older version of it.
SELECT DISTINCT d.job_id
FROM [{schema}].[job_deps] AS d WITH (READCOMMITTEDLOCK)
INNER JOIN [{schema}].[jobs] AS j WITH (READCOMMITTEDLOCK) ON j.id = d.job_id
WHERE d.dep_id IN ({ids}) AND j.state = N'waiting'
