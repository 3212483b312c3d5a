-- name: job_key_leases
-- For each concurrency key of queue $1, how many of its jobs hold a lease that has not expired
-- by the clock at the start of this statement (which runs after queue_control_lock was
-- granted, as job_live_leases), the most first. Jobs without a key are left out.
SELECT concurrency_key, count(*) AS running FROM {schema}.jobs
WHERE queue = $1 AND state = 'running' AND lease_expires_at > statement_timestamp()
  AND concurrency_key IS NOT NULL
GROUP BY concurrency_key
ORDER BY count(*) DESC, concurrency_key
