-- name: workflow_lock
-- A workflow's row, read inside the driver's transaction (BEGIN IMMEDIATE holds the
-- database's write lock, which is the row's lock here). Binds: ?1 id.
SELECT id, name, open, callback, created_at FROM queue_workflows WHERE id = ?1
