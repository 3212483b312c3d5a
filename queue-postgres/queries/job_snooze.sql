-- name: job_snooze
-- Back to pending, due $3 microseconds from now, the attempt given back and the snooze counted,
-- while the job has snoozed fewer than $4 times; no one holds it now, so the worker is cleared.
-- The state is compared with `(SELECT 'running')` so that the plan looks the id up by primary
-- key and never scans the partial lease index (see job_complete_many).
UPDATE {schema}.jobs
SET state = 'pending', run_at = now() + $3::bigint * interval '1 microsecond',
    attempts = GREATEST(attempts - 1, 0), snoozes = snoozes + 1, updated_at = now(),
    worker = NULL, lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running') AND snoozes < $4
