-- name: job_stats
-- Counts per queue and state; only queue @P1 when not NULL. Queue names compare in binary
-- order (their collation is Latin1_General_100_BIN2).
SELECT queue,
       CAST(SUM(CASE WHEN state = N'pending' AND run_at <= SYSUTCDATETIME() THEN 1 ELSE 0 END) AS BIGINT) AS available,
       CAST(SUM(CASE WHEN state = N'pending' AND run_at > SYSUTCDATETIME() THEN 1 ELSE 0 END) AS BIGINT) AS scheduled,
       CAST(SUM(CASE WHEN state = N'running' THEN 1 ELSE 0 END) AS BIGINT) AS running,
       CAST(SUM(CASE WHEN state = N'completed' THEN 1 ELSE 0 END) AS BIGINT) AS completed,
       CAST(SUM(CASE WHEN state = N'dead' THEN 1 ELSE 0 END) AS BIGINT) AS dead,
       CAST(SUM(CASE WHEN state = N'cancelled' THEN 1 ELSE 0 END) AS BIGINT) AS cancelled
FROM [{schema}].[jobs]
WHERE @P1 IS NULL OR queue = @P1
GROUP BY queue
ORDER BY queue
