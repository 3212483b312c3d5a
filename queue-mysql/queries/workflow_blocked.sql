-- name: workflow_blocked
-- In a retry's transaction, after the workflows of the listed jobs were locked: each listed job
-- ({ids} expands to `?, ?, ...`) with a dependency of policy 0 (must complete) that is dead or
-- cancelled, or was deleted (no row joins), with the least such: what a retry of it would wait
-- for in vain. The dependencies along job_deps' index `job`, each looked up by primary key; a
-- plain read (under the workflows' locks no retry of such a dependency runs meanwhile).
-- Binds: the ids.
SELECT STRAIGHT_JOIN d.job_id AS id, MIN(d.dep_id) AS blocked_by
FROM {prefix}job_deps AS d FORCE INDEX (job)
LEFT JOIN {prefix}jobs AS p FORCE INDEX (PRIMARY) ON p.id = d.dep_id
WHERE d.job_id IN ({ids}) AND d.policy = 0 AND (p.id IS NULL OR p.state IN ('dead', 'cancelled'))
GROUP BY d.job_id
