-- name: workflow_steps_insert
-- The step names of workflow $1's jobs: one workflow_jobs row per element of $2 (job ids) and
-- $3 (their step names, same index).
INSERT INTO {schema}.workflow_jobs (workflow_id, job_id, step)
SELECT $1, t.job_id, t.step
FROM UNNEST($2::uuid[], $3::text[]) AS t (job_id, step)
