-- name: job_live_leases
-- How many jobs of queue $1 hold a lease that has not expired, by the clock at the start of
-- this statement, which runs after queue_control_lock was granted (an expired lease stops
-- counting at its expiry, rescued or not). statement_timestamp() is stable: engines that refuse
-- volatile functions in distributed queries (Citus) take it.
SELECT count(*) FROM {schema}.jobs
WHERE queue = $1 AND state = 'running' AND lease_expires_at > statement_timestamp()
