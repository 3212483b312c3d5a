-- name: workflow_get
-- A workflow's row. Binds: id.
SELECT id, name, open, callback, created_at FROM {prefix}workflows WHERE id = ?
