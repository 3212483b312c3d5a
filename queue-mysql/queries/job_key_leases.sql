-- name: job_key_leases
-- For each concurrency key of a queue, how many of its jobs hold a lease that has not expired by
-- the server's clock at this statement (which runs after queue_control_lock was granted, as
-- job_live_leases: a fresh read view under READ COMMITTED), the most first. Jobs without a key
-- are left out. Binds: queue.
SELECT concurrency_key, COUNT(*) AS running FROM {prefix}jobs
WHERE queue = ? AND state = 'running' AND lease_expires_at > UTC_TIMESTAMP(6)
  AND concurrency_key IS NOT NULL
GROUP BY concurrency_key
ORDER BY COUNT(*) DESC, concurrency_key
