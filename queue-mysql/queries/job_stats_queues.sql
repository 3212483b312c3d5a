-- name: job_stats_queues
-- job_stats, step 1: the queues that have jobs (only the given one when not NULL), read as a
-- loose scan of the claim index (one descent per queue), not row by row.
SELECT queue FROM {prefix}jobs
WHERE (? IS NULL OR queue = ?)
GROUP BY queue
