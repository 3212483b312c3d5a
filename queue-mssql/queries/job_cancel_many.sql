-- name: job_cancel_many
-- job_cancel for each listed job that is still pending, running or waiting ({ids} expands to
-- `CAST(@Pn AS BINARY(16))` per id, from @P1), each found by primary key: the lease token is
-- kept, so a holder's next transition finds the job cancelled under its token. A unique job
-- keeps holding its key only when cancelled (bit 16) is one of its states (see migration 0005).
UPDATE [{schema}].[jobs]
SET state = N'cancelled', finished_at = SYSUTCDATETIME(), updated_at = SYSUTCDATETIME(),
    lease_expires_at = NULL,
    unique_live = CASE WHEN (unique_states & 16) <> 0 THEN unique_live ELSE NULL END
WHERE id IN ({ids}) AND state IN (N'pending', N'running', N'waiting')
