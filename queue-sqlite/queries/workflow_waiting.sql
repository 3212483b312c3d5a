-- name: workflow_waiting
-- Waiting jobs in id order along queue_jobs_waiting, after ?1 (an empty blob sorts before
-- every id). Binds: ?1 after or NULL, ?2 limit.
SELECT id FROM queue_jobs
WHERE state = 'waiting' AND id > COALESCE(?1, X'')
ORDER BY id
LIMIT ?2
