-- name: job_retry_many
-- job_retry for each listed job that is still dead or cancelled ({ids} expands to
-- `CAST(@Pn AS BINARY(16))` per id, from @P1), in one statement: back to pending, due now,
-- attempts and snoozes reset (the error history is kept), and a unique job holds its key again
-- (see migration 0005). A dedup key that a live job holds (jobs_dedup_idx), or a unique key
-- that another job holds (jobs_unique_idx, also another job of the same list), fails it as a
-- whole with 2601, changing nothing; the engine then retries job by job. A step of a workflow
-- comes back waiting, as in job_retry.
UPDATE [{schema}].[jobs]
SET state = CASE WHEN workflow_id IS NULL THEN N'pending' ELSE N'waiting' END, attempts = 0, snoozes = 0, blocked_by = NULL, run_at = SYSUTCDATETIME(), finished_at = NULL,
    updated_at = SYSUTCDATETIME(), worker = NULL, lease_token = NULL, lease_expires_at = NULL,
    unique_live = unique_key
WHERE id IN ({ids}) AND state IN (N'dead', N'cancelled')
