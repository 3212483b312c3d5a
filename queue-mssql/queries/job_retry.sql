-- name: job_retry
-- A dead or cancelled job back to pending, due now, attempts and snoozes reset (the error
-- history is kept); returns its queue. Fails with 2601 on jobs_dedup_idx when a live job holds
-- its dedup key.
UPDATE [{schema}].[jobs]
SET state = N'pending', attempts = 0, snoozes = 0, run_at = SYSUTCDATETIME(), finished_at = NULL,
    updated_at = SYSUTCDATETIME(), worker = NULL, lease_token = NULL, lease_expires_at = NULL
OUTPUT inserted.queue
WHERE id = CAST(@P1 AS BINARY(16)) AND state IN (N'dead', N'cancelled')
