-- name: workflow_reopen
-- In a retry's transaction: the cancelled jobs blocked by one of $1 (dependencies that were
-- retried) wait again;
-- returns them. blocked_by has no index: a job is only ever blocked by one of its own
-- dependencies (workflow_block takes it from job_deps), so the candidates are the dependents
-- of $1, found by job_deps' primary key and looked up by id, not by reading the whole table.
UPDATE {schema}.jobs
SET state = 'waiting', blocked_by = NULL, finished_at = NULL, updated_at = now(),
    version = version + 1
WHERE id = ANY(ARRAY(SELECT d.job_id FROM {schema}.job_deps d WHERE d.dep_id = ANY($1::uuid[])))
  AND state = (SELECT 'cancelled') AND blocked_by = ANY($1::uuid[])
RETURNING id
