-- name: job_ids
-- The ids and queues of the jobs a bulk operation matches, newest first (as job_list, whose
-- cursor this shares). Binds: ?1 queue or NULL, ?2 JSON array of states, ?3 kind or NULL,
-- ?4 created before (microseconds) or NULL, ?5 only ids below it or NULL, ?6 limit.
SELECT id, queue FROM queue_jobs
WHERE (?1 IS NULL OR queue = ?1)
  AND state IN (SELECT value FROM json_each(?2))
  AND (?3 IS NULL OR kind = ?3)
  AND (?4 IS NULL OR created_at < ?4)
  AND id < COALESCE(?5, X'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF')
ORDER BY id DESC
LIMIT ?6
