-- name: job_stats
-- Counts per queue and state; only queue $1 when not null.
SELECT queue,
       count(*) FILTER (WHERE state = 'pending' AND run_at <= now()) AS available,
       count(*) FILTER (WHERE state = 'pending' AND run_at > now()) AS scheduled,
       count(*) FILTER (WHERE state = 'running') AS running,
       count(*) FILTER (WHERE state = 'completed') AS completed,
       count(*) FILTER (WHERE state = 'dead') AS dead,
       count(*) FILTER (WHERE state = 'cancelled') AS cancelled
FROM {schema}.jobs
WHERE $1::text IS NULL OR queue = $1
GROUP BY queue
ORDER BY queue
