-- name: workflow_promote
-- workflow_promote, step 1 (in a transaction of the driver's, READ COMMITTED, or the
-- caller's): of the listed jobs, those still waiting whose every dependency is resolved
-- (completed; or, policy 1, dead, cancelled or deleted; a deleted dependency of policy 0 is
-- never resolved: workflow_block cancels its dependents) and that are not the callback of an open workflow, with their queues, locked. MySQL has
-- no UPDATE ... RETURNING and refuses a subquery on the table being updated, so step 2
-- (workflow_promote_update) promotes exactly these rows by id.
-- It decides from committed states only: every row is read by a locking read, which waits for
-- a writer's commit and then sees the latest committed version, whatever the isolation level
-- (a subquery would be a consistent read of a snapshot taken before such a wait). So whichever
-- finisher commits last promotes. The order is fixed (STRAIGHT_JOIN): the job, then its
-- workflow's row when it is the callback (a batch's members are added while that row is
-- locked, so once it is read every member's dependency row is committed), then its
-- dependencies (job_deps' index `job`) and their jobs. {ids} expands to `?, ?, ...`.
-- Binds: the waiting jobs' ids.
SELECT STRAIGHT_JOIN j.id, j.queue
FROM {prefix}jobs AS j FORCE INDEX (PRIMARY)
LEFT JOIN {prefix}workflows AS w ON w.id = j.workflow_id AND w.callback = j.id
LEFT JOIN {prefix}job_deps AS d FORCE INDEX (job) ON d.job_id = j.id
LEFT JOIN {prefix}jobs AS p FORCE INDEX (PRIMARY) ON p.id = d.dep_id
WHERE j.id IN ({ids}) AND j.state = 'waiting'
GROUP BY j.id, j.queue
HAVING COALESCE(MAX(w.open), FALSE) = FALSE
   AND COALESCE(SUM(d.job_id IS NOT NULL AND NOT (p.state <=> 'completed'
       OR (d.policy = 1 AND (p.id IS NULL OR p.state IN ('dead', 'cancelled'))))), 0) = 0
FOR UPDATE
