-- name: job_snooze
-- Back to pending at ?4, the attempt given back and the snooze counted, while the job has
-- snoozed fewer than ?5 times; no one holds it now, so the worker is cleared.
-- Binds: ?1 id, ?2 lease_token, ?3 now, ?4 run_at, ?5 most snoozes.
UPDATE queue_jobs
SET state = 'pending',
    run_at = ?4,
    attempts = max(attempts - 1, 0),
    snoozes = snoozes + 1,
    worker = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?3
WHERE id = ?1 AND lease_token = ?2 AND state = 'running' AND snoozes < ?5
