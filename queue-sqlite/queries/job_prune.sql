-- name: job_prune
-- Deletes at most ?4 finished jobs (index queue_jobs_finished); the engine repeats it until
-- fewer are deleted. Binds: ?1 finished before, ?2 queue or NULL, ?3 JSON array of states,
-- ?4 limit.
DELETE FROM queue_jobs
WHERE rowid IN (
    SELECT rowid FROM queue_jobs
    WHERE finished_at < ?1
      AND state IN (SELECT value FROM json_each(?3))
      AND (?2 IS NULL OR queue = ?2)
    LIMIT ?4
)
