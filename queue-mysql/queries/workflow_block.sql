-- name: workflow_block
-- workflow_block, step 1 (in a transaction of the driver's, READ COMMITTED, or the caller's):
-- of the listed jobs, those still waiting with a dependency of policy 0 (must complete) that
-- is dead or cancelled, or was deleted (no row joins), each with the least such dependency,
-- locked. MySQL has no UPDATE ...
-- RETURNING and refuses a subquery on the table being updated, so step 2
-- (workflow_block_update) cancels exactly these rows by id. Every row is read by a locking
-- read, which sees the latest committed version whatever the isolation level: the job, its
-- dependencies (job_deps' index `job`) and their jobs, in that order (STRAIGHT_JOIN); a
-- dependency that is not dead or cancelled is unlocked again at once (READ COMMITTED), one
-- that is stays locked, so a retry of it waits for this cancellation and then reopens the job.
-- {ids} expands to `?, ?, ...`. Binds: the waiting jobs' ids.
SELECT STRAIGHT_JOIN j.id, MIN(d.dep_id) AS blocked_by
FROM {prefix}jobs AS j FORCE INDEX (PRIMARY)
JOIN {prefix}job_deps AS d FORCE INDEX (job) ON d.job_id = j.id
LEFT JOIN {prefix}jobs AS p FORCE INDEX (PRIMARY) ON p.id = d.dep_id
WHERE j.id IN ({ids}) AND j.state = 'waiting'
  AND d.policy = 0 AND (p.id IS NULL OR p.state IN ('dead', 'cancelled'))
GROUP BY j.id
FOR UPDATE
