-- name: job_rescue_move
-- job_rescue (values as there) when finished jobs are partitioned: a job rescued to pending,
-- a step of a workflow or a job whose uniqueness covers the dead state is changed in place;
-- any other that dies ($3) moves to jobs_done. One row: how many jobs were rescued.
WITH kept AS (
    UPDATE {schema}.jobs j
    SET state = CASE WHEN $3 THEN 'dead' ELSE 'pending' END,
        run_at = CASE WHEN $3 THEN j.run_at ELSE now() END,
        finished_at = CASE WHEN $3 THEN now() ELSE NULL END,
        worker = CASE WHEN $3 THEN j.worker ELSE NULL END,
        last_error = $4,
        errors = CASE WHEN jsonb_array_length(coalesce(j.errors, '[]')) >= $5
                      THEN coalesce(j.errors, '[]') - 0 ELSE coalesce(j.errors, '[]') END
                 || jsonb_build_array(jsonb_build_object(
                        'attempt', j.attempts, 'at', now(), 'error', $4::text, 'worker', j.worker)),
        updated_at = now(),
        lease_token = NULL, lease_expires_at = NULL, version = j.version + 1
    FROM UNNEST($1::uuid[], $2::uuid[]) AS x (id, token)
    WHERE j.id = x.id AND j.lease_token = x.token
      AND j.state = (SELECT 'running') AND j.lease_expires_at < now()
      AND NOT ($3 AND j.workflow_id IS NULL AND (j.unique_key IS NULL OR j.unique_states & 8 = 0))
    RETURNING 1
), moved AS (
    DELETE FROM {schema}.jobs j
    USING UNNEST($1::uuid[], $2::uuid[]) AS x (id, token)
    WHERE $3 AND j.id = x.id AND j.lease_token = x.token
      AND j.state = (SELECT 'running') AND j.lease_expires_at < now()
      AND j.workflow_id IS NULL AND (j.unique_key IS NULL OR j.unique_states & 8 = 0)
    RETURNING j.*
), stored AS (
    INSERT INTO {schema}.jobs_done (
        id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token,
        lease_expires_at, worker, last_error, dedup_key, version, created_at, updated_at,
        finished_at, kind, meta, timeout_us, snoozes, errors, output, unique_key, unique_states,
        concurrency_key, workflow_id, blocked_by)
    SELECT m.id, m.queue, m.payload, m.priority, 'dead', m.attempts, m.max_attempts, m.run_at,
           NULL, NULL, m.worker, $4, m.dedup_key, m.version + 1, m.created_at, now(), now(),
           m.kind, m.meta, m.timeout_us, m.snoozes,
           CASE WHEN jsonb_array_length(coalesce(m.errors, '[]')) >= $5
                  THEN coalesce(m.errors, '[]') - 0 ELSE coalesce(m.errors, '[]') END
             || jsonb_build_array(jsonb_build_object(
                    'attempt', m.attempts, 'at', now(), 'error', $4::text, 'worker', m.worker)),
           m.output, m.unique_key, m.unique_states, m.concurrency_key, m.workflow_id, m.blocked_by
    FROM moved m
    RETURNING 1
)
SELECT (SELECT count(*) FROM kept) + (SELECT count(*) FROM stored) AS n
