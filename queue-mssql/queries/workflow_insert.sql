-- name: workflow_insert
-- A workflow's row: id @P1 (as the jobs table stores ids), name @P2 (NULL: none), @P3 whether
-- it is an open batch (its callback waits until workflow_seal), @P4 a batch's callback job
-- (NULL: none); created now, by the database's clock. `open` is a reserved word, so bracketed.
-- A second insert of the same id fails with 2627 on workflows_pkey, the table's only unique
-- index: the driver reports it as a duplicate workflow id.
INSERT INTO [{schema}].[workflows] (id, name, [open], callback, created_at)
VALUES (CAST(@P1 AS BINARY(16)), @P2, @P3, CAST(@P4 AS BINARY(16)), SYSUTCDATETIME())
