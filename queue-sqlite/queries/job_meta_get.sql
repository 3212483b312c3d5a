-- name: job_meta_get
-- A running job's metadata and version, only under its current lease.
-- Binds: ?1 id, ?2 lease_token.
SELECT meta, version FROM queue_jobs
WHERE id = ?1 AND lease_token = ?2 AND state = 'running'
