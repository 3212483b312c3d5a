-- name: workflow_prune_jobs
-- A step of workflow_prune, in its transaction, after workflow_prune_deps: deletes the jobs of
-- the listed workflows ({ids}: one placeholder per workflow), found through their step rows
-- (workflow_jobs' primary key) and deleted by primary key; only finished ones, which every one
-- of them is. A join rather than `id IN (subquery)` (see workflow_prune_deps).
DELETE j FROM {prefix}jobs AS j
JOIN {prefix}workflow_jobs AS n ON n.job_id = j.id
WHERE n.workflow_id IN ({ids}) AND j.state IN ('completed', 'dead', 'cancelled')
