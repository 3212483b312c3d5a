-- name: workflow_list
-- Up to $2 workflows, newest first (by id), below $1 when not null (the cursor as in job_list),
-- each with how many of its jobs are in each state: one row per workflow and state, and one
-- row with a NULL state for a workflow without jobs (or whose jobs were all deleted).
-- The counts are a LATERAL subquery, so each workflow's jobs are read by workflow_jobs' primary
-- key: joined to the page instead, a generic plan (which estimates LIMIT $2 at a tenth of the
-- workflows) hash-joins the page with every row of workflow_jobs.
SELECT w.id, w.name, w.open, w.callback, w.created_at, c.state, c.jobs
FROM (
    SELECT id, name, open, callback, created_at FROM {schema}.workflows
    WHERE id <= coalesce($1::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
      AND id IS DISTINCT FROM $1::uuid
    ORDER BY id DESC
    LIMIT $2
) w
LEFT JOIN LATERAL (
    SELECT j.state, count(*) AS jobs
    FROM {schema}.workflow_jobs n
    JOIN {schema}.jobs j ON j.id = n.job_id
    WHERE n.workflow_id = w.id
    GROUP BY j.state
) c ON true
ORDER BY w.id DESC, c.state
