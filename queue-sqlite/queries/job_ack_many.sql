-- name: JobSetCompletedManyIfRunning
-- Completes every job whose (id, lease_token) pair is listed and still running; each pair is
-- looked up by primary key. The `(?, ?)` tuple after VALUES is repeated once per lease.
-- Binds: now (finished_at), now (updated_at), then id and lease_token per lease.
UPDATE queue_jobs
SET state = 'completed',
    finished_at = ?,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?
FROM (VALUES
(?, ?)
) AS leases
WHERE queue_jobs.id = leases.column1
  AND queue_jobs.lease_token = leases.column2
  AND queue_jobs.state = 'running'
