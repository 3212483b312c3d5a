-- name: job_key_waiting
-- How many pending jobs of a queue with a concurrency key are due (for stats), in index
-- key_claim. Binds: queue, key (its UTF-8 bytes).
SELECT COUNT(*) FROM {prefix}jobs
WHERE queue = ? AND pending_key = ? AND state = 'pending' AND run_at <= UTC_TIMESTAMP(6)
