-- name: workflow_prune_deps
-- The first delete of workflow_prune, in its transaction: deletes the dependencies (rows of
-- queue_job_deps, by index queue_job_deps_job) of every job of the workflows just deleted,
-- whose step rows list them (by queue_workflow_jobs' primary key). The driver repeats the
-- `(?)` tuple after VALUES once per workflow. Binds: each workflow's id.
DELETE FROM queue_job_deps
WHERE job_id IN (
    SELECT n.job_id FROM queue_workflow_jobs n
    WHERE n.workflow_id IN (VALUES
(?)
    )
)
