-- name: workflow_prune
-- Retention, in the transaction of workflow_prune_lock: of the listed workflows, those every
-- one of whose jobs is finished and finished before its state's cutoff (completed, dead,
-- cancelled, in microseconds; NULL: jobs in that state are kept, and keep their workflow),
-- and those none of whose jobs exists any more. Each workflow's jobs are read along
-- queue_workflow_jobs' primary key and looked up by queue_jobs' primary key, the NOT EXISTS
-- ending at the first job that keeps it. The driver then deletes, over the ids returned, their
-- jobs' dependencies (workflow_prune_deps), their jobs (workflow_prune_jobs), their step rows
-- (workflow_prune_steps) and their rows (workflow_prune_rows). The driver repeats the `(?)`
-- tuple after VALUES once per workflow; every placeholder is anonymous (numbered ones beside
-- the anonymous VALUES would share their numbers). Binds: the three cutoffs, then each
-- workflow's id.
WITH c (completed, dead, cancelled) AS (SELECT ?, ?, ?)
SELECT w.id FROM queue_workflows w, c
WHERE w.id IN (VALUES
(?)
)
  AND NOT EXISTS (
      SELECT 1 FROM queue_workflow_jobs n
      JOIN queue_jobs j ON j.id = n.job_id
      WHERE n.workflow_id = w.id
        AND (CASE j.state
                 WHEN 'completed' THEN j.finished_at < c.completed
                 WHEN 'dead' THEN j.finished_at < c.dead
                 WHEN 'cancelled' THEN j.finished_at < c.cancelled
             END) IS NOT TRUE
  )
