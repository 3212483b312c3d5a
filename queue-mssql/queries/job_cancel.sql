-- name: job_cancel
-- A pending, running or waiting (a step of a workflow) job to cancelled. Keeps lease_token, so
-- the holder's next transition finds the job cancelled under its token.
-- A unique job keeps holding its key only when cancelled (bit 16) is one of its states (see
-- migration 0005).
UPDATE [{schema}].[jobs]
SET state = N'cancelled', finished_at = SYSUTCDATETIME(), updated_at = SYSUTCDATETIME(),
    lease_expires_at = NULL,
    unique_live = CASE WHEN (unique_states & 16) <> 0 THEN unique_live ELSE NULL END
WHERE id = CAST(@P1 AS BINARY(16)) AND state IN (N'pending', N'running', N'waiting')
