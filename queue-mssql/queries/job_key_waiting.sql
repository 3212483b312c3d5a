-- name: job_key_waiting
-- How many pending jobs of queue @P1 with concurrency key @P2 (UTF-8 bytes) are due, for
-- stats: a range of jobs_key_idx (filter carried as literals, as job_key_next says), a plain
-- read like job_stats's.
SELECT COUNT_BIG(*) AS waiting
FROM [{schema}].[jobs]
WHERE queue = @P1 AND state = N'pending'
  AND concurrency_key = CAST(@P2 AS VARBINARY(800)) AND concurrency_key IS NOT NULL
  AND run_at <= SYSUTCDATETIME()
