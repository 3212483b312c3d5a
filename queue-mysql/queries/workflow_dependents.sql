-- name: workflow_dependents
-- The waiting jobs that depend on any of the listed (finished) jobs: a range of job_deps'
-- primary key per finished job, then each dependent by primary key. {ids} expands to
-- `?, ?, ...`. Binds: the finished jobs' ids.
SELECT DISTINCT d.job_id
FROM {prefix}job_deps AS d
JOIN {prefix}jobs AS j FORCE INDEX (PRIMARY) ON j.id = d.job_id
WHERE d.dep_id IN ({ids}) AND j.state = 'waiting'
