-- name: workflow_prune_steps
-- A step of workflow_prune, in its transaction, after workflow_prune_jobs: deletes the
-- step rows of the workflows just deleted (a range of queue_workflow_jobs' primary key each).
-- The driver repeats the `(?)` tuple after VALUES once per workflow. Binds: each workflow's id.
DELETE FROM queue_workflow_jobs
WHERE workflow_id IN (VALUES
(?)
)
