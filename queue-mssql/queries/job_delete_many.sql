-- name: job_delete_many
-- Deletes each listed job ({ids} expands to `CAST(@Pn AS BINARY(16))` per id, from @P1) whose
-- state is still one of {states} (expands to `@Pn, ...` after the ids), never a running one:
-- the engine does not pass that state, and the statement checks it too.
DELETE FROM [{schema}].[jobs]
WHERE id IN ({ids}) AND state IN ({states}) AND state <> N'running'
