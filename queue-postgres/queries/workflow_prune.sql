-- name: workflow_prune
-- Retention: deletes up to $2 workflows whose id is below $1, least id (oldest) first, none of
-- whose jobs is still in the jobs table (all pruned or deleted), with their workflow_jobs rows
-- and the job_deps rows of their jobs, in one statement (so one transaction); the row count is
-- the workflows deleted.
-- `doomed` reads workflows_pkey from its start up to $1 (never the whole table). The NOT EXISTS
-- reads one workflow's jobs from workflow_jobs_pkey and looks each up in jobs_pkey, stopping
-- at the first one found: its OFFSET 0 keeps it a subplan run per workflow, which a generic
-- plan (the queue's connections keep one per statement) could otherwise turn into an anti-join
-- hashing the jobs table. The workflows are locked SKIP LOCKED: one that a batch_add holds
-- (workflow_lock) is left for the next round rather than deleted under the members it adds.
-- The deletes take their ids as arrays (each `= ANY(ARRAY(...))` an index scan of the table's
-- key: workflow_jobs_pkey, job_deps_job_idx, workflows_pkey), not as a join with the CTE,
-- which a generic plan may hash against a sequential scan. The CTEs that delete run to
-- completion whether read or not; all see the same snapshot, so job_deps is reached through
-- the step rows the same statement deletes (their RETURNING).
WITH doomed AS MATERIALIZED (
    SELECT w.id FROM {schema}.workflows w
    WHERE w.id < $1
      AND NOT EXISTS (
          SELECT 1 FROM {schema}.workflow_jobs n
          JOIN {schema}.jobs j ON j.id = n.job_id
          WHERE n.workflow_id = w.id
          OFFSET 0
      )
    ORDER BY w.id
    LIMIT $2
    FOR UPDATE OF w SKIP LOCKED
),
steps AS (
    DELETE FROM {schema}.workflow_jobs
    WHERE workflow_id = ANY(ARRAY(SELECT id FROM doomed))
    RETURNING job_id
),
deps AS (
    DELETE FROM {schema}.job_deps
    WHERE job_id = ANY(ARRAY(SELECT job_id FROM steps))
)
DELETE FROM {schema}.workflows
WHERE id = ANY(ARRAY(SELECT id FROM doomed))
