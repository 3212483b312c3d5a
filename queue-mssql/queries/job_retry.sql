-- name: job_retry
-- A dead or cancelled job back to pending, due now, attempts and snoozes reset (the error
-- history is kept), in the engine's transaction; a step of a workflow back to waiting, which
-- the engine settles in the same transaction; returns its queue. A unique job holds its key again (pending is in every
-- rule's states; see migration 0005). Fails with 2601, changing nothing, on jobs_dedup_idx when
-- a live job holds its dedup key, or on jobs_unique_idx when another job holds its unique key
-- (the engine then names that job: job_unique_holder).
UPDATE [{schema}].[jobs]
SET state = CASE WHEN workflow_id IS NULL THEN N'pending' ELSE N'waiting' END, attempts = 0, snoozes = 0, blocked_by = NULL, run_at = SYSUTCDATETIME(), finished_at = NULL,
    updated_at = SYSUTCDATETIME(), worker = NULL, lease_token = NULL, lease_expires_at = NULL,
    unique_live = unique_key
OUTPUT inserted.queue
WHERE id = CAST(@P1 AS BINARY(16)) AND state IN (N'dead', N'cancelled')
