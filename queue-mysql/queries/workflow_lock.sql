-- name: workflow_lock
-- A workflow's row, locked until the transaction ends (a locking read: the latest committed
-- row, whatever the transaction's isolation level). Binds: id.
SELECT id, name, open, callback, created_at FROM {prefix}workflows WHERE id = ? FOR UPDATE
