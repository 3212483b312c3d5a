-- name: job_live_leases
-- How many jobs of a queue hold a lease that has not expired, by the server's clock at this
-- statement (an expired lease stops counting at its expiry, rescued or not).
SELECT COUNT(*) FROM {prefix}jobs
WHERE queue = ? AND state = 'running' AND lease_expires_at > UTC_TIMESTAMP(6)
