-- name: workflow_get
-- Binds: ?1 id.
SELECT id, name, open, callback, created_at FROM queue_workflows WHERE id = ?1
