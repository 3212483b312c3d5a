-- name: workflow_get
-- Workflow @P1's row (no row: no such workflow).
SELECT id, name, [open], callback, created_at
FROM [{schema}].[workflows]
WHERE id = CAST(@P1 AS BINARY(16))
