-- name: job_key_leases
-- For each concurrency key of queue ?1, how many of its jobs hold a lease that has not expired
-- by SQLite's clock under the write lock (as job_live_leases), the most first. Jobs without a
-- key are left out.
SELECT concurrency_key, count(*) AS running FROM queue_jobs
WHERE queue = ?1 AND state = 'running'
  AND lease_expires_at > CAST(unixepoch('subsec') * 1000000 AS INTEGER)
  AND concurrency_key IS NOT NULL
GROUP BY concurrency_key
ORDER BY count(*) DESC, concurrency_key
