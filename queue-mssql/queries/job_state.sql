-- name: job_state
-- Why a transition changed nothing: the job's state now (no row: the job is gone). A locking
-- read (READCOMMITTEDLOCK) sees the latest committed row also inside a caller's transaction and
-- when READ_COMMITTED_SNAPSHOT is on.
SELECT state FROM [{schema}].[jobs] WITH (READCOMMITTEDLOCK)
WHERE id = CAST(@P1 AS BINARY(16))
