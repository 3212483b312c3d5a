-- name: job_complete_many_move
-- job_complete_many when finished jobs are partitioned (see job_complete_move).
-- The same with finished partitions: a job that is kept and needs its row in jobs (a step of
-- a workflow, whose jobs go together; a uniqueness over the completed state, which
-- jobs_unique_idx holds) is completed in place, as in job_complete_many; any other kept job moves to
-- jobs_done (its state's partition for this finish time) in the same statement. The three
-- branches take disjoint rows.
WITH gone AS (
    DELETE FROM {schema}.jobs j
    USING UNNEST($1::uuid[], $2::uuid[]) AS l (id, token)
    WHERE NOT $3 AND j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
      AND j.output IS NULL AND j.workflow_id IS NULL
      AND (j.unique_key IS NULL OR j.unique_states & 4 = 0)
    RETURNING j.id
), kept AS (
    UPDATE {schema}.jobs j
    SET state = 'completed', finished_at = now(), updated_at = now(),
        lease_token = NULL, lease_expires_at = NULL, version = j.version + 1
    FROM UNNEST($1::uuid[], $2::uuid[]) AS l (id, token)
    WHERE j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
      AND (j.workflow_id IS NOT NULL OR (j.unique_key IS NOT NULL AND j.unique_states & 4 <> 0))
    RETURNING j.id
), moved AS (
    DELETE FROM {schema}.jobs j
    USING UNNEST($1::uuid[], $2::uuid[]) AS l (id, token)
    WHERE j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
      AND ($3 OR j.output IS NOT NULL) AND j.workflow_id IS NULL
      AND (j.unique_key IS NULL OR j.unique_states & 4 = 0)
    RETURNING j.*
), stored AS (
    INSERT INTO {schema}.jobs_done (
        id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token,
        lease_expires_at, worker, last_error, dedup_key, version, created_at, updated_at,
        finished_at, kind, meta, timeout_us, snoozes, errors, output, unique_key, unique_states,
        concurrency_key, workflow_id, blocked_by)
    SELECT m.id, m.queue, m.payload, m.priority, 'completed', m.attempts, m.max_attempts,
           m.run_at, NULL, NULL, m.worker, m.last_error, m.dedup_key, m.version + 1, m.created_at,
           now(), now(), m.kind, m.meta, m.timeout_us, m.snoozes, m.errors, m.output,
           m.unique_key, m.unique_states, m.concurrency_key, m.workflow_id, m.blocked_by
    FROM moved m
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM kept) + (SELECT count(*) FROM stored) AS completed
