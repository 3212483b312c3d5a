-- name: JobRescue
-- Running jobs whose lease expired go back to pending (due now), or dead when their attempts are
-- used up. Returns the rescued jobs' queues and new states, for wake-ups.
UPDATE {schema}.jobs
SET state = CASE WHEN attempts < max_attempts THEN 'pending' ELSE 'dead' END,
    run_at = CASE WHEN attempts < max_attempts THEN now() ELSE run_at END,
    finished_at = CASE WHEN attempts < max_attempts THEN NULL ELSE now() END,
    last_error = 'lease expired', updated_at = now(),
    lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE state = 'running' AND lease_expires_at < now()
RETURNING queue, state
