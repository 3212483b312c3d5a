-- name: job_complete
-- Fenced by the lease token; the worker is kept, for operators; @P3 is the handler's output (or
-- NULL), stored with the completion. A unique job keeps holding its key only when completed
-- (bit 4) is one of its states (see migration 0005).
UPDATE [{schema}].[jobs]
SET state = N'completed', finished_at = SYSUTCDATETIME(), updated_at = SYSUTCDATETIME(),
    output = @P3, lease_token = NULL, lease_expires_at = NULL,
    unique_live = CASE WHEN (unique_states & 4) <> 0 THEN unique_live ELSE NULL END
WHERE id = CAST(@P1 AS BINARY(16)) AND lease_token = @P2 AND state = N'running'
