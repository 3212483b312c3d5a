-- name: workflow_list
-- The @P2 newest workflows (by id, which is time-ordered: UUID v7 bytes in big-endian order),
-- below @P1 when not NULL, newest first, each with how many of its jobs are in each state: one
-- row per workflow and state. A workflow whose jobs were all deleted (or that has none) comes
-- as one row with a NULL state and a count (jobs) of 0; so does the part of a workflow whose jobs
-- were deleted (the driver leaves such rows out of the counts). The CTE takes the page from
-- the primary key before anything is joined; RECOMPILE, as job_list: the first page and the
-- next ones get their own plans.
WITH w AS (
    SELECT TOP (@P2) id, name, [open], callback, created_at
    FROM [{schema}].[workflows]
    WHERE @P1 IS NULL OR id < CAST(@P1 AS BINARY(16))
    ORDER BY id DESC
)
SELECT w.id, w.name, w.[open], w.callback, w.created_at, j.state, COUNT_BIG(j.id) AS jobs
FROM w
LEFT JOIN [{schema}].[workflow_jobs] AS n ON n.workflow_id = w.id
LEFT JOIN [{schema}].[jobs] AS j ON j.id = n.job_id
GROUP BY w.id, w.name, w.[open], w.callback, w.created_at, j.state
ORDER BY w.id DESC
OPTION (RECOMPILE)
