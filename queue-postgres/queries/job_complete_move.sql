-- name: job_complete_move
-- job_complete (values as there) when finished jobs are partitioned. One row: how many jobs
-- were completed (0 or 1).
-- The same with finished partitions: a job that is kept and needs its row in jobs (a step of
-- a workflow, whose jobs go together; a uniqueness over the completed state, which
-- jobs_unique_idx holds) is completed in place, as in job_complete; any other kept job moves to
-- jobs_done (its state's partition for this finish time) in the same statement. The three
-- branches take disjoint rows.
WITH gone AS (
    DELETE FROM {schema}.jobs
    WHERE NOT $4 AND $3::json IS NULL
      AND id = $1 AND lease_token = $2 AND state = (SELECT 'running')
      AND workflow_id IS NULL AND (unique_key IS NULL OR unique_states & 4 = 0)
    RETURNING id
), kept AS (
    UPDATE {schema}.jobs
    SET state = 'completed', finished_at = now(), updated_at = now(), output = $3::json,
        lease_token = NULL, lease_expires_at = NULL, version = version + 1
    WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
      AND (workflow_id IS NOT NULL OR (unique_key IS NOT NULL AND unique_states & 4 <> 0))
    RETURNING id
), moved AS (
    DELETE FROM {schema}.jobs
    WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
      AND ($4 OR $3::json IS NOT NULL)
      AND workflow_id IS NULL AND (unique_key IS NULL OR unique_states & 4 = 0)
    RETURNING *
), stored AS (
    INSERT INTO {schema}.jobs_done (
        id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token,
        lease_expires_at, worker, last_error, dedup_key, version, created_at, updated_at,
        finished_at, kind, meta, timeout_us, snoozes, errors, output, unique_key, unique_states,
        concurrency_key, workflow_id, blocked_by)
    SELECT m.id, m.queue, m.payload, m.priority, 'completed', m.attempts, m.max_attempts,
           m.run_at, NULL, NULL, m.worker, m.last_error, m.dedup_key, m.version + 1, m.created_at,
           now(), now(), m.kind, m.meta, m.timeout_us, m.snoozes, m.errors, $3::json,
           m.unique_key, m.unique_states, m.concurrency_key, m.workflow_id, m.blocked_by
    FROM moved m
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM kept) + (SELECT count(*) FROM stored)
    AS completed
