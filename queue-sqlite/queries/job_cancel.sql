-- name: job_cancel
-- A waiting, pending or running job. The lease token is kept so the holder's next transition reports the cancellation.
-- Binds: ?1 id, ?2 now.
UPDATE queue_jobs
SET state = 'cancelled',
    finished_at = ?2,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?2
WHERE id = ?1 AND state IN ('waiting', 'pending', 'running')
