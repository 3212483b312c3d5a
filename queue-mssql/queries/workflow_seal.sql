-- name: workflow_seal
-- Closes the open workflow (batch) @P1: its callback may run once its members have finished.
-- Rows changed: 0 when there is no such workflow or it is closed already.
UPDATE [{schema}].[workflows]
SET [open] = 0
WHERE id = CAST(@P1 AS BINARY(16)) AND [open] = 1
