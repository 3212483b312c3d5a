-- name: workflow_prune
-- Retention: deletes up to ?2 workflows whose id is below ?1, least id (oldest) first, none of
-- whose jobs is still in queue_jobs (all pruned or deleted), and returns their ids. Run in a
-- transaction of the driver's, followed by workflow_prune_deps and workflow_prune_steps over
-- the ids returned. The workflows are read along their primary key from its start up to ?1
-- (never the whole table); each one's jobs along queue_workflow_jobs' primary key, each looked
-- up by queue_jobs' primary key, the NOT EXISTS ending at the first job found (a workflow
-- with a job left costs one look-up or a few, never a scan of queue_jobs).
-- Binds: ?1 below this workflow id, ?2 limit.
DELETE FROM queue_workflows
WHERE id IN (
    SELECT w.id FROM queue_workflows w
    WHERE w.id < ?1
      AND NOT EXISTS (
          SELECT 1 FROM queue_workflow_jobs n
          JOIN queue_jobs j ON j.id = n.job_id
          WHERE n.workflow_id = w.id
      )
    ORDER BY w.id
    LIMIT ?2
)
RETURNING id
