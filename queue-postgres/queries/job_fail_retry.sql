-- name: job_fail_retry
-- Back to pending, due $3 microseconds from now, the failure recorded in last_error ($4) and
-- appended to the history in `errors` (the oldest entry dropped once $5 are kept); no one holds
-- it now, so the worker is cleared. Every right-hand side reads the row as it was, so
-- `attempts` and `worker` are the failed attempt's.
-- The state is compared with `(SELECT 'running')` so that the plan looks the id up by primary
-- key and never scans the partial lease index (see job_complete_many).
UPDATE {schema}.jobs
SET state = 'pending', run_at = now() + $3::bigint * interval '1 microsecond',
    last_error = $4,
    errors = CASE WHEN jsonb_array_length(coalesce(errors, '[]')) >= $5
                  THEN coalesce(errors, '[]') - 0 ELSE coalesce(errors, '[]') END
             || jsonb_build_array(jsonb_build_object(
                    'attempt', attempts, 'at', now(), 'error', $4::text, 'worker', worker)),
    updated_at = now(), worker = NULL,
    lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
