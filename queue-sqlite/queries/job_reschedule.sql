-- name: job_reschedule
-- A pending job's run time (?2, NULL keeps it) and priority (?3, NULL keeps it).
-- Binds: ?1 id, ?2 run_at or NULL, ?3 priority or NULL, ?4 now.
UPDATE queue_jobs
SET run_at = COALESCE(?2, run_at),
    priority = COALESCE(?3, priority),
    version = version + 1,
    updated_at = ?4
WHERE id = ?1 AND state = 'pending'
RETURNING queue
