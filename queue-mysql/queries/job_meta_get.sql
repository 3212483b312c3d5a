-- name: job_meta_get
-- A running job's metadata and version, only under its current lease. Binds: id, lease_token.
SELECT meta, version FROM {prefix}jobs
WHERE id = ? AND lease_token = ? AND state = 'running'
