-- name: workflow_prune_rows
-- The last step of workflow_prune, in its transaction: deletes the listed workflows' rows
-- ({ids}: one placeholder per workflow) by primary key; its row count is the statement's.
DELETE FROM {prefix}workflows WHERE id IN ({ids})
