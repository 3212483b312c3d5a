-- name: job_meta_get
-- A running job's metadata and row version (as a bigint), only under its current lease (@P1
-- id, @P2 token).
SELECT meta, CAST(version AS BIGINT) AS version
FROM [{schema}].[jobs]
WHERE id = CAST(@P1 AS BINARY(16)) AND lease_token = @P2 AND state = N'running'
