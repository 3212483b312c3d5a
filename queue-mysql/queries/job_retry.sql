-- name: job_retry
-- Redrive a dead or cancelled job (attempts and snoozes reset, the error history kept), in the
-- engine's transaction: back to pending, or a step of a workflow back to waiting (the engine
-- settles it in the same transaction); fails with 1062 on dedup_live when a live job holds its
-- key.
UPDATE {prefix}jobs
SET attempts = 0,
    snoozes = 0, blocked_by = NULL,
    run_at = UTC_TIMESTAMP(6),
    finished_at = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    worker = NULL,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = CASE WHEN workflow_id IS NULL THEN 'pending' ELSE 'waiting' END
WHERE id = ? AND state IN ('dead', 'cancelled')
