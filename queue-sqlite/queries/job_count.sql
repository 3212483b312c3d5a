-- name: job_count
-- How many jobs a bulk operation matches (as job_ids). Binds: ?1 queue or NULL, ?2 JSON array
-- of states, ?3 kind or NULL, ?4 created before (microseconds) or NULL.
SELECT COUNT(*) FROM queue_jobs
WHERE (?1 IS NULL OR queue = ?1)
  AND state IN (SELECT value FROM json_each(?2))
  AND (?3 IS NULL OR kind = ?3)
  AND (?4 IS NULL OR created_at < ?4)
