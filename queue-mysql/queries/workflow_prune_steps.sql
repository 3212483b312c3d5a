-- name: workflow_prune_steps
-- A step of workflow_prune, in its transaction, after workflow_prune_jobs: deletes the
-- step rows of the listed workflows ({ids}: one placeholder per workflow; a range of
-- workflow_jobs' primary key each).
DELETE FROM {prefix}workflow_jobs WHERE workflow_id IN ({ids})
