-- name: workflow_reopen
-- workflow_reopen, step 1 (in the retry's transaction): the cancelled jobs blocked by
-- one of the listed (retried) jobs, locked. blocked_by has no index (none is added to the jobs
-- table for workflows): a job is only ever blocked by one of its dependencies, so the jobs
-- blocked by a retried job are among its dependents, a range of job_deps' primary key
-- (dep_id, job_id), each then read by primary key. Step 2 (workflow_reopen_update) reopens
-- exactly these rows by id. {ids} expands to `?, ?, ...`. Binds: the retried jobs' ids.
SELECT STRAIGHT_JOIN j.id
FROM {prefix}job_deps AS d
JOIN {prefix}jobs AS j FORCE INDEX (PRIMARY) ON j.id = d.job_id
WHERE d.dep_id IN ({ids}) AND j.state = 'cancelled' AND j.blocked_by = d.dep_id
FOR UPDATE
