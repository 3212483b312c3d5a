-- name: job_unique_holder
-- Another job holding the unique key of job @P1 (a retry of @P1 met 2601): the row of
-- jobs_unique_idx with @P1's key, unless it is @P1's own. The literal IS NOT NULL lets the
-- filtered index answer. A read at the pool's READ COMMITTED: the latest committed rows.
SELECT TOP (1) h.id
FROM [{schema}].[jobs] AS j
INNER JOIN [{schema}].[jobs] AS h ON h.unique_live = j.unique_key AND h.id <> j.id
WHERE j.id = CAST(@P1 AS BINARY(16)) AND h.unique_live IS NOT NULL
