-- name: job_cancel_move
-- job_cancel (values as there) when finished jobs are partitioned: a step of a workflow, or a job
-- whose uniqueness covers the cancelled state, is cancelled in place; any other moves to
-- jobs_done. One row: how many jobs were cancelled.
WITH kept AS (
    UPDATE {schema}.jobs
    SET state = 'cancelled', finished_at = now(), updated_at = now(),
        lease_expires_at = NULL, version = version + 1
    WHERE id = $1 AND state IN ('pending', 'running', 'waiting')
      AND (workflow_id IS NOT NULL OR (unique_key IS NOT NULL AND unique_states & 16 <> 0))
    RETURNING 1
), moved AS (
    DELETE FROM {schema}.jobs
    WHERE id = $1 AND state IN ('pending', 'running', 'waiting')
      AND workflow_id IS NULL AND (unique_key IS NULL OR unique_states & 16 = 0)
    RETURNING *
), stored AS (
    INSERT INTO {schema}.jobs_done (
        id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token,
        lease_expires_at, worker, last_error, dedup_key, version, created_at, updated_at,
        finished_at, kind, meta, timeout_us, snoozes, errors, output, unique_key, unique_states,
        concurrency_key, workflow_id, blocked_by)
    SELECT m.id, m.queue, m.payload, m.priority, 'cancelled', m.attempts, m.max_attempts,
           m.run_at, m.lease_token, NULL, m.worker, m.last_error, m.dedup_key, m.version + 1,
           m.created_at, now(), now(), m.kind, m.meta, m.timeout_us, m.snoozes, m.errors,
           m.output, m.unique_key, m.unique_states, m.concurrency_key, m.workflow_id, m.blocked_by
    FROM moved m
    RETURNING 1
)
SELECT (SELECT count(*) FROM kept) + (SELECT count(*) FROM stored) AS n
