-- name: job_extend
-- Binds: ?1 id, ?2 lease_token, ?3 now, ?4 lease in microseconds. The new expiry runs from
-- SQLite's clock read under the write lock (see job_claim), and is returned.
UPDATE queue_jobs
SET lease_expires_at = CAST(unixepoch('subsec') * 1000000 AS INTEGER) + ?4,
    version = version + 1,
    updated_at = ?3
WHERE id = ?1 AND lease_token = ?2 AND state = 'running'
RETURNING lease_expires_at
