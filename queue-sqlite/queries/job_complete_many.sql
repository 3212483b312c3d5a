-- name: job_complete_many
-- Completes every job whose (id, lease_token) pair is listed and still running; each pair is
-- looked up by primary key. The driver repeats the `(?, ?)` tuple after VALUES once per lease.
-- Every placeholder is anonymous (sqlx numbers anonymous ones apart from `?NNN` ones).
-- Binds: now, then id and lease_token per lease.
-- `+state` keeps the lookup on the primary key: as a plain term it qualifies the partial index
-- of running jobs, which statistics gathered while no job ran (ANALYZE, PRAGMA optimize) show
-- as empty, and the planner then scanned every running job for each pair of the list.
WITH p (now) AS (SELECT ?)
UPDATE queue_jobs
SET state = 'completed',
    finished_at = p.now,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = p.now
FROM p, (VALUES
(?, ?)
) AS leases
WHERE queue_jobs.id = leases.column1
  AND queue_jobs.lease_token = leases.column2
  AND +queue_jobs.state = 'running'
