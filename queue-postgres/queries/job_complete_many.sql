-- name: job_complete_many
-- Completes every job of $1 whose lease token (same index in $2) is still current.
-- The state is compared with `(SELECT 'running')`, a value the planner does not see while it
-- plans: written as the literal, the clause matches the predicate of the partial lease index
-- (WHERE state = 'running'), and the generic plan (a UNNEST of a parameter is estimated at 10
-- rows) hash-joins the list with a full scan of that index, i.e. with every running job's
-- entry and those of recently finished jobs, on every batch. With the value hidden, the plan
-- looks each listed id up by primary key, whatever the number of running jobs.
UPDATE {schema}.jobs j
SET state = 'completed', finished_at = now(), updated_at = now(),
    lease_token = NULL, lease_expires_at = NULL, version = j.version + 1
FROM UNNEST($1::uuid[], $2::uuid[]) AS l (id, token)
WHERE j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
