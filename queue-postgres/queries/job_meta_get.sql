-- name: job_meta_get
-- A running job's metadata (as text) and version, only under its current lease ($1 id,
-- $2 token). The state is compared with `(SELECT 'running')` (see job_complete_many).
SELECT meta::text AS meta, version FROM {schema}.jobs
WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
