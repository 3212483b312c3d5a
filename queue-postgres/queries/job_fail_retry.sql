-- name: job_fail_retry
-- Back to pending, due $3 microseconds from now, the failure recorded in last_error ($4); no
-- one holds it now, so the worker is cleared.
-- The state is compared with `(SELECT 'running')` so that the plan looks the id up by primary
-- key and never scans the partial lease index (see job_complete_many).
UPDATE {schema}.jobs
SET state = 'pending', run_at = now() + $3::bigint * interval '1 microsecond',
    last_error = $4, updated_at = now(), worker = NULL,
    lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
