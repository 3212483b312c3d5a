-- name: job_live_leases
-- How many jobs of queue ?1 hold a lease that has not expired, by SQLite's clock under the
-- write lock (the clock leases are given out by; an expired lease stops counting at its expiry,
-- rescued or not).
SELECT count(*) FROM queue_jobs
WHERE queue = ?1 AND state = 'running'
  AND lease_expires_at > CAST(unixepoch('subsec') * 1000000 AS INTEGER)
