-- name: job_meta_set
-- Writes a running job's merged metadata, only under its current lease and only if the row
-- still has the version read with the metadata. Binds: meta, version, id, lease_token.
UPDATE {prefix}jobs
SET meta = ?,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1
WHERE version = ? AND id = ? AND lease_token = ? AND state = 'running'
