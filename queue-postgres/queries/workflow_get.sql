-- name: workflow_get
-- Workflow $1's row.
SELECT id, name, open, callback, created_at FROM {schema}.workflows WHERE id = $1
