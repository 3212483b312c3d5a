-- name: workflow_prune_rows
-- The last step of workflow_prune, in its transaction: deletes the listed workflows' rows by
-- primary key. The driver repeats the `(?)` tuple after VALUES once per workflow. Binds: each
-- workflow's id.
DELETE FROM queue_workflows
WHERE id IN (VALUES
(?)
)
