-- name: job_key_waiting
-- How many pending jobs of queue ?1 with concurrency key ?2 are due by ?3 (for stats).
SELECT count(*) FROM queue_jobs INDEXED BY queue_jobs_key
WHERE queue = ?1 AND state = 'pending' AND concurrency_key = ?2 AND run_at <= ?3
