-- name: workflow_prune
-- Retention, in a transaction of the driver's: the ids of up to LIMIT workflows whose id is
-- below the bound, least id (oldest) first, none of whose jobs is still in the jobs table (all
-- pruned or deleted). The driver then deletes, over those ids and in the same transaction,
-- their jobs' dependencies (workflow_prune_deps), their step rows (workflow_prune_steps) and
-- the workflows' rows (workflow_prune_rows, whose row count it returns). The workflows are
-- read along their primary key from its start up to the bound (never the whole table); each
-- one's jobs along workflow_jobs' primary key, each looked up by the jobs table's primary key,
-- the NOT EXISTS ending at the first job found (never a scan of the jobs table). A plain
-- read, without locks: a workflow gains jobs only by batch_add to an open batch, whose callback
-- waits among its jobs until it is sealed (only a batch whose callback an operator cancelled,
-- and retention then deleted, could take a batch_add between this read and the deletes).
-- Binds: the bound (a workflow id), the limit.
SELECT w.id FROM {prefix}workflows AS w
WHERE w.id < ?
  AND NOT EXISTS (
      SELECT 1 FROM {prefix}workflow_jobs AS n
      JOIN {prefix}jobs AS j ON j.id = n.job_id
      WHERE n.workflow_id = w.id
  )
ORDER BY w.id
LIMIT ?
