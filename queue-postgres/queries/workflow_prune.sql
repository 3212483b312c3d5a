-- name: workflow_prune
-- Retention, in the transaction of workflow_prune_lock, as a statement of its own (so it reads
-- what committed after those locks were taken): deletes each workflow of $1 every one of whose
-- jobs is finished, and finished more than its state's age ago ($2 completed, $3 dead, $4
-- cancelled, in microseconds; NULL: jobs in that state are kept, and keep their workflow), or
-- none of whose jobs exists any more, with its jobs, their job_deps and workflow_jobs rows and
-- its row; returns the workflows and the jobs deleted.
-- `doomed` looks each workflow up in workflows_pkey; the NOT EXISTS reads its jobs from
-- workflow_jobs_pkey and looks each up in jobs_pkey, stopping at the first that keeps it (its
-- OFFSET 0 keeps it a subplan run per workflow, which a generic plan could otherwise turn into
-- an anti-join hashing the jobs table). The deletes take their ids as arrays (each
-- `= ANY(ARRAY(...))` an index scan of the table's key), not as joins with the CTEs. The CTEs
-- that delete run to completion whether read or not; all see the same snapshot, so job_deps
-- and the jobs are reached through the step rows the same statement deletes (their
-- RETURNING). A job is deleted only if finished (every one of a doomed workflow is: the
-- workflow's lock keeps retries out).
WITH doomed AS MATERIALIZED (
    SELECT w.id FROM {schema}.workflows w
    WHERE w.id = ANY($1::uuid[])
      AND NOT EXISTS (
          SELECT 1 FROM {schema}.workflow_jobs n
          JOIN {schema}.jobs j ON j.id = n.job_id
          WHERE n.workflow_id = w.id
            AND (CASE j.state
                     WHEN 'completed'
                         THEN j.finished_at < now() - $2::bigint * interval '1 microsecond'
                     WHEN 'dead'
                         THEN j.finished_at < now() - $3::bigint * interval '1 microsecond'
                     WHEN 'cancelled'
                         THEN j.finished_at < now() - $4::bigint * interval '1 microsecond'
                 END) IS NOT TRUE
          OFFSET 0
      )
),
steps AS (
    DELETE FROM {schema}.workflow_jobs
    WHERE workflow_id = ANY(ARRAY(SELECT id FROM doomed))
    RETURNING job_id
),
deps AS (
    DELETE FROM {schema}.job_deps
    WHERE job_id = ANY(ARRAY(SELECT job_id FROM steps))
),
gone AS (
    DELETE FROM {schema}.jobs
    WHERE id = ANY(ARRAY(SELECT job_id FROM steps))
      AND state IN ((SELECT 'completed'), (SELECT 'dead'), (SELECT 'cancelled'))
    RETURNING 1
),
rows AS (
    DELETE FROM {schema}.workflows
    WHERE id = ANY(ARRAY(SELECT id FROM doomed))
    RETURNING 1
)
SELECT (SELECT count(*) FROM rows) AS workflows, (SELECT count(*) FROM gone) AS jobs
