-- name: job_reschedule
-- A pending job's run time (a delay in microseconds from now; NULL keeps it) and priority
-- (NULL keeps it). Binds: delay, delay, priority, id. Its queue is read after it by
-- job_reschedule_queue (no UPDATE ... RETURNING here).
UPDATE {prefix}jobs
SET run_at = IF(? IS NULL, run_at, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))),
    priority = COALESCE(?, priority),
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1
WHERE id = ? AND state = 'pending'
