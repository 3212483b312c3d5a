-- name: workflow_reopen
-- The jobs that were cancelled because one of the listed jobs ended dead or cancelled, now
-- retried ({ids} expands to `CAST(@Pn AS BINARY(16))` per id, from @P1), wait again: no cause,
-- not finished; OUTPUT returns them. The row version changes by itself (ROWVERSION). No index
-- holds blocked_by (the workflow spec adds none to jobs), so this reads the cancelled jobs of
-- the table.
UPDATE [{schema}].[jobs]
SET state = N'waiting', blocked_by = NULL, finished_at = NULL, updated_at = SYSUTCDATETIME()
OUTPUT inserted.id
WHERE state = N'cancelled' AND blocked_by IN ({ids})
