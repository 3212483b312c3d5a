-- name: job_snooze
-- Back to pending after a delay (microseconds), the attempt given back and the snooze counted,
-- while the job has snoozed fewer than the given number of times; no one holds it now, so the
-- worker is cleared. Binds: delay, most snoozes, id, lease_token.
UPDATE {prefix}jobs
SET run_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)),
    attempts = IF(attempts > 0, attempts - 1, 0),
    snoozes = snoozes + 1,
    lease_token = NULL,
    lease_expires_at = NULL,
    worker = NULL,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'pending'
WHERE snoozes < ? AND id = ? AND lease_token = ? AND state = 'running'
