-- name: job_meta_set
-- Writes a running job's merged metadata (@P4), only under its current lease (@P1 id, @P2
-- token) and only if the row still has the version read with the metadata (@P3; rowversion
-- changes by itself on every update).
UPDATE [{schema}].[jobs]
SET meta = @P4, updated_at = SYSUTCDATETIME()
WHERE id = CAST(@P1 AS BINARY(16)) AND lease_token = @P2 AND state = N'running'
  AND CAST(version AS BIGINT) = @P3
