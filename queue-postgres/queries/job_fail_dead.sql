-- name: job_fail_dead
-- Dead, the failure recorded in last_error ($3) and appended to the history (as in
-- job_fail_retry; $4 entries kept).
-- The state is compared with `(SELECT 'running')` so that the plan looks the id up by primary
-- key and never scans the partial lease index (see job_complete_many).
UPDATE {schema}.jobs
SET state = 'dead', finished_at = now(), last_error = $3,
    errors = CASE WHEN jsonb_array_length(coalesce(errors, '[]')) >= $4
                  THEN coalesce(errors, '[]') - 0 ELSE coalesce(errors, '[]') END
             || jsonb_build_array(jsonb_build_object(
                    'attempt', attempts, 'at', now(), 'error', $3::text, 'worker', worker)),
    updated_at = now(), lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
