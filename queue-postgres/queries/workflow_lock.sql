-- name: workflow_lock
-- Workflow $1's row, locked until the transaction ends: adding to an open batch and sealing it
-- take turns.
SELECT id, name, open, callback, created_at FROM {schema}.workflows WHERE id = $1 FOR UPDATE
