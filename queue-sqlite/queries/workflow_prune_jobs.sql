-- name: workflow_prune_jobs
-- A step of workflow_prune, in its transaction, after workflow_prune_deps: deletes the jobs of
-- the listed workflows (each found through queue_workflow_jobs' primary key, deleted by
-- primary key); only finished ones, which every one of them is. The driver repeats the `(?)`
-- tuple after VALUES once per workflow. Binds: each workflow's id.
DELETE FROM queue_jobs
WHERE id IN (
    SELECT n.job_id FROM queue_workflow_jobs n
    WHERE n.workflow_id IN (VALUES
(?)
    )
)
  AND state IN ('completed', 'dead', 'cancelled')
