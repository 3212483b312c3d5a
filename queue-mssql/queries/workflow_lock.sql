-- name: workflow_lock
-- Workflow @P1's row, in a transaction, with an update lock on it (UPDLOCK: held until the
-- transaction ends, also when READ_COMMITTED_SNAPSHOT is on, where it reads the latest
-- committed row): another workflow_lock of it, and its seal, wait until then. No row: no such
-- workflow.
SELECT id, name, [open], callback, created_at
FROM [{schema}].[workflows] WITH (UPDLOCK, ROWLOCK)
WHERE id = CAST(@P1 AS BINARY(16))
