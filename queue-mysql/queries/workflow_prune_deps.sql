-- name: workflow_prune_deps
-- The first delete of workflow_prune, in its transaction: deletes the dependencies of every
-- job of the listed workflows ({ids}: one placeholder per workflow), found through their step
-- rows (workflow_jobs' primary key) and then by index `job` of job_deps. A join rather than
-- `job_id IN (subquery)`, which servers without semi-joins for DELETE run once per row of
-- job_deps.
DELETE d FROM {prefix}job_deps AS d
JOIN {prefix}workflow_jobs AS n ON n.job_id = d.job_id
WHERE n.workflow_id IN ({ids})
