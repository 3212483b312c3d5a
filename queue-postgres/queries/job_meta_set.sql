-- name: job_meta_set
-- Writes a running job's merged metadata ($4), only under its current lease ($1 id, $2 token)
-- and only if the row still has the version read with the metadata ($3).
-- The state is compared with `(SELECT 'running')` (see job_complete_many).
UPDATE {schema}.jobs
SET meta = $4::json, updated_at = now(), version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running') AND version = $3
