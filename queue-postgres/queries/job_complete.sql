-- name: job_complete
-- Fenced by the lease token; the worker is kept, for operators; $3 is the handler's output (or
-- NULL), stored with the completion. Unless $4 (keep completed jobs), the job is deleted
-- instead when nothing needs its row: no output, not a step of a workflow, no uniqueness over
-- the completed state (bit 4 of unique_states, as in jobs_unique_idx). The two branches take
-- disjoint rows. One row: how many jobs were completed (0 or 1).
-- The state is compared with `(SELECT 'running')` so that the plan looks the id up by primary
-- key and never scans the partial lease index (see job_complete_many).
WITH gone AS (
    DELETE FROM {schema}.jobs
    WHERE NOT $4 AND $3::json IS NULL
      AND id = $1 AND lease_token = $2 AND state = (SELECT 'running')
      AND workflow_id IS NULL AND (unique_key IS NULL OR unique_states & 4 = 0)
    RETURNING id
), done AS (
    UPDATE {schema}.jobs
    SET state = 'completed', finished_at = now(), updated_at = now(), output = $3::json,
        lease_token = NULL, lease_expires_at = NULL, version = version + 1
    WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
      AND ($4 OR $3::json IS NOT NULL
           OR workflow_id IS NOT NULL OR (unique_key IS NOT NULL AND unique_states & 4 <> 0))
    RETURNING id
)
SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM done) AS completed
