-- name: job_live_leases
-- How many jobs of queue $1 hold a lease that has not expired, by the clock at this statement
-- (an expired lease stops counting at its expiry, rescued or not).
SELECT count(*) FROM {schema}.jobs
WHERE queue = $1 AND state = 'running' AND lease_expires_at > clock_timestamp()
