-- name: workflow_blocked
-- In a retry's transaction, after the workflows of the listed jobs were locked: each listed job
-- ({ids} expands to `CAST(@Pn AS BINARY(16))` per id, from @P1) with a dependency of policy 0
-- (must complete) that is dead or cancelled, or was deleted (no row joins), with the least such
-- (TOP (1) ... ORDER BY), what a retry of it would wait for in vain. Each job by primary key,
-- its dependencies along job_deps_job_idx, each looked up by the jobs table's primary key.
SELECT x.id, x.blocked_by
FROM (
    SELECT j.id,
           (SELECT TOP (1) d.dep_id
            FROM [{schema}].[job_deps] AS d WITH (READCOMMITTEDLOCK)
            LEFT JOIN [{schema}].[jobs] AS p WITH (READCOMMITTEDLOCK) ON p.id = d.dep_id
            WHERE d.job_id = j.id AND d.policy = 0
              AND (p.id IS NULL OR p.state IN (N'dead', N'cancelled'))
            ORDER BY d.dep_id) AS blocked_by
    FROM [{schema}].[jobs] AS j WITH (READCOMMITTEDLOCK)
    WHERE j.id IN ({ids})
) AS x
WHERE x.blocked_by IS NOT NULL
