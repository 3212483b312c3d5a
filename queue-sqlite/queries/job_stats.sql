-- name: job_stats
-- Job counts per queue and state. Binds: ?1 now, ?2 queue or NULL.
SELECT queue,
       COALESCE(SUM(state = 'pending' AND run_at <= ?1), 0) AS available,
       COALESCE(SUM(state = 'pending' AND run_at > ?1), 0) AS scheduled,
       COALESCE(SUM(state = 'running'), 0) AS running,
       COALESCE(SUM(state = 'completed'), 0) AS completed,
       COALESCE(SUM(state = 'dead'), 0) AS dead,
       COALESCE(SUM(state = 'cancelled'), 0) AS cancelled
FROM queue_jobs
WHERE ?2 IS NULL OR queue = ?2
GROUP BY queue
ORDER BY queue
