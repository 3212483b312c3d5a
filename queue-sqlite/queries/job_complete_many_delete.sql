-- name: job_complete_many_delete
-- job_complete_many when completed jobs are not kept: deletes the listed jobs whose lease is
-- current and whose row nothing needs (see job_complete_delete); job_complete_many then
-- completes the rest, in the same transaction. Each id is looked up by primary key (the
-- pair written as `(id, lease_token) IN (VALUES ...)` scans the table). The driver repeats
-- the `(?, ?)` tuple after VALUES once per lease. Binds: id and lease_token per lease.
WITH leases (id, token) AS (VALUES
(?, ?)
)
DELETE FROM queue_jobs
WHERE id IN (SELECT id FROM leases)
  AND lease_token = (SELECT token FROM leases WHERE leases.id = queue_jobs.id)
  AND state = 'running'
  AND output IS NULL AND workflow_id IS NULL
  AND (unique_key IS NULL OR unique_states & 4 = 0)
