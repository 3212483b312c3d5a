-- name: job_rescue
-- Expired jobs to dead when `dead`, else to pending and due now; only rows still running under
-- the listed token with an expired lease. The error is also appended to each job's history (as
-- in job_fail_retry, with the worker whose lease expired). The driver repeats the `(?, ?)`
-- tuple after VALUES once per job. Every placeholder is anonymous (sqlx numbers anonymous ones
-- apart from `?NNN` ones). Binds: now, dead, last_error, now as RFC 3339 text, entries kept,
-- then id and lease_token per job.
-- `+state` keeps the lookup on the primary key: as a plain term it qualifies the partial index
-- of running jobs, which statistics gathered while no job ran (ANALYZE, PRAGMA optimize) show
-- as empty, and the planner then scanned every running job for each listed job.
WITH p (now, dead, error, at, kept) AS (SELECT ?, ?, ?, ?, ?)
UPDATE queue_jobs
SET state = CASE WHEN p.dead THEN 'dead' ELSE 'pending' END,
    run_at = CASE WHEN p.dead THEN run_at ELSE p.now END,
    finished_at = CASE WHEN p.dead THEN p.now ELSE NULL END,
    worker = CASE WHEN p.dead THEN worker ELSE NULL END,
    last_error = p.error,
    errors = json_insert(
        CASE WHEN json_array_length(COALESCE(errors, '[]')) >= p.kept
             THEN json_remove(errors, '$[0]') ELSE COALESCE(errors, '[]') END,
        '$[#]', json_object('attempt', attempts, 'at', p.at, 'error', p.error, 'worker', worker)),
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = p.now
FROM p, (VALUES
(?, ?)
) AS expired
WHERE queue_jobs.id = expired.column1
  AND queue_jobs.lease_token = expired.column2
  AND +queue_jobs.state = 'running'
  AND queue_jobs.lease_expires_at < p.now
