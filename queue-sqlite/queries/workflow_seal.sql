-- name: workflow_seal
-- An open batch closed: it takes no more jobs, and its callback may run. Binds: ?1 id.
UPDATE queue_workflows SET open = 0 WHERE id = ?1 AND open = 1
