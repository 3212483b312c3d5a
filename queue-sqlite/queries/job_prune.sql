-- name: JobDeleteFinished
-- Binds: ?1 finished before, ?2 queue or NULL, ?3..?5 states (a state may repeat).
DELETE FROM queue_jobs
WHERE finished_at < ?1
  AND state IN (?3, ?4, ?5)
  AND (?2 IS NULL OR queue = ?2)
