-- name: job_unique_replace
-- A unique push met the pending job ?1 and replaces its payload, priority and run time.
-- Binds: ?1 id, ?2 payload, ?3 priority, ?4 run_at, ?5 now.
UPDATE queue_jobs
SET payload = ?2,
    priority = ?3,
    run_at = ?4,
    version = version + 1,
    updated_at = ?5
WHERE id = ?1 AND state = 'pending'
