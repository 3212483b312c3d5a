-- name: workflow_prune
-- Retention, in the transaction of workflow_prune_lock (a statement of its own, READ
-- COMMITTED: it reads what committed after the locks were taken): of the listed workflows
-- ({ids}), those every one of whose jobs is finished, and finished before its state's cutoff
-- (completed, dead, cancelled; NULL: jobs in that state are kept, and keep their workflow), and
-- those none of whose jobs exists any more. Each workflow by primary key, its jobs along
-- workflow_jobs' primary key, each looked up by the jobs table's, the NOT EXISTS ending at the
-- first job that keeps it. The driver then deletes, over the ids returned and in the same
-- transaction, their jobs' dependencies (workflow_prune_deps), their jobs
-- (workflow_prune_jobs), their step rows (workflow_prune_steps) and their rows
-- (workflow_prune_rows). Binds: the ids, then the three ages in microseconds (NULL: kept).
SELECT w.id FROM {prefix}workflows AS w FORCE INDEX (PRIMARY)
WHERE w.id IN ({ids})
  AND NOT EXISTS (
      SELECT 1 FROM {prefix}workflow_jobs AS n
      JOIN {prefix}jobs AS j FORCE INDEX (PRIMARY) ON j.id = n.job_id
      WHERE n.workflow_id = w.id
        AND NOT COALESCE(CASE j.state
            WHEN 'completed' THEN j.finished_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6))
            WHEN 'dead' THEN j.finished_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6))
            WHEN 'cancelled' THEN j.finished_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6))
        END, FALSE)
  )
