-- name: job_stats
-- Counts per queue and state; an optional queue filter (a NULL binding disables it).
SELECT queue,
       CAST(SUM(state = 'pending' AND run_at <= UTC_TIMESTAMP(6)) AS SIGNED) AS available,
       CAST(SUM(state = 'pending' AND run_at > UTC_TIMESTAMP(6)) AS SIGNED) AS scheduled,
       CAST(SUM(state = 'running') AS SIGNED) AS running,
       CAST(SUM(state = 'completed') AS SIGNED) AS completed,
       CAST(SUM(state = 'dead') AS SIGNED) AS dead,
       CAST(SUM(state = 'cancelled') AS SIGNED) AS cancelled
FROM {prefix}jobs
WHERE (? IS NULL OR queue = ?)
GROUP BY queue
ORDER BY queue
