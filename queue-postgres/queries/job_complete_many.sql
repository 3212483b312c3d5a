-- name: job_complete_many
-- Completes every job of $1 whose lease token (same index in $2) is still current; unless $3
-- (keep completed jobs), deletes the ones nothing needs instead (see job_complete; a job whose
-- output an earlier completion recorded is kept too). One row: how many jobs were completed.
-- The state is compared with `(SELECT 'running')`, a value the planner does not see while it
-- plans: written as the literal, the clause matches the predicate of the partial lease index
-- (WHERE state = 'running'), and the generic plan (a UNNEST of a parameter is estimated at 10
-- rows) hash-joins the list with a full scan of that index, i.e. with every running job's
-- entry and those of recently finished jobs, on every batch. With the value hidden, the plan
-- looks each listed id up by primary key, whatever the number of running jobs.
WITH gone AS (
    DELETE FROM {schema}.jobs j
    USING UNNEST($1::uuid[], $2::uuid[]) AS l (id, token)
    WHERE NOT $3 AND j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
      AND j.output IS NULL AND j.workflow_id IS NULL
      AND (j.unique_key IS NULL OR j.unique_states & 4 = 0)
    RETURNING j.id
), done AS (
    UPDATE {schema}.jobs j
    SET state = 'completed', finished_at = now(), updated_at = now(),
        lease_token = NULL, lease_expires_at = NULL, version = j.version + 1
    FROM UNNEST($1::uuid[], $2::uuid[]) AS l (id, token)
    WHERE j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
      AND ($3 OR j.output IS NOT NULL OR j.workflow_id IS NOT NULL
           OR (j.unique_key IS NOT NULL AND j.unique_states & 4 <> 0))
    RETURNING j.id
)
SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM done) AS completed
