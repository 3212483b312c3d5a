-- name: job_key_waiting
-- How many pending jobs of queue $1 with concurrency key $2 are due (for stats).
SELECT count(*) FROM {schema}.jobs
WHERE queue = $1 AND state = 'pending' AND concurrency_key = $2 AND run_at <= now()
