-- name: job_candidates
-- The optimistic claim's read: due pending jobs of queue ?1 in claim order, with the version
-- each claim is guarded by. Binds: ?1 queue, ?2 now, ?3 limit.
SELECT id, version FROM queue_jobs
WHERE queue = ?1 AND state = 'pending' AND run_at <= ?2
ORDER BY priority DESC, run_at, id
LIMIT ?3
