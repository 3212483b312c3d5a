-- name: JobSetCompletedManyIfRunning
-- Completes every (id, lease_token) pair still running. The `(?, ?)` tuple after VALUES is
-- repeated once per lease. Binds: now (finished_at), now (updated_at), then id and
-- lease_token per lease.
UPDATE queue_jobs
SET state = 'completed',
    finished_at = ?,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?
WHERE state = 'running' AND (id, lease_token) IN (VALUES
(?, ?)
)
