-- name: job_candidates
-- The optimistic claim's read: due pending jobs of queue $1 with their versions, in claim order.
SELECT id, version FROM {schema}.jobs
WHERE queue = $1 AND state = 'pending' AND run_at <= now()
ORDER BY priority DESC, run_at, id
LIMIT $2
