-- name: job_meta_set
-- Writes a running job's merged metadata, only under its current lease and only if the row
-- still has the version read with the metadata. Binds: ?1 id, ?2 lease_token, ?3 version,
-- ?4 meta, ?5 now.
UPDATE queue_jobs
SET meta = ?4,
    version = version + 1,
    updated_at = ?5
WHERE id = ?1 AND lease_token = ?2 AND state = 'running' AND version = ?3
