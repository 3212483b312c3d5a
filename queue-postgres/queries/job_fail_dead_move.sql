-- name: job_fail_dead_move
-- job_fail_dead (values as there) when finished jobs are partitioned: a step of a workflow, or
-- a job whose uniqueness covers the dead state, dies in place; any other moves to jobs_done.
-- One row: how many jobs died (0 or 1).
WITH kept AS (
    UPDATE {schema}.jobs
    SET state = 'dead', finished_at = now(), last_error = $3,
        errors = CASE WHEN jsonb_array_length(coalesce(errors, '[]')) >= $4
                      THEN coalesce(errors, '[]') - 0 ELSE coalesce(errors, '[]') END
                 || jsonb_build_array(jsonb_build_object(
                        'attempt', attempts, 'at', now(), 'error', $3::text, 'worker', worker)),
        updated_at = now(), lease_token = NULL, lease_expires_at = NULL, version = version + 1
    WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
      AND (workflow_id IS NOT NULL OR (unique_key IS NOT NULL AND unique_states & 8 <> 0))
    RETURNING 1
), moved AS (
    DELETE FROM {schema}.jobs
    WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
      AND workflow_id IS NULL AND (unique_key IS NULL OR unique_states & 8 = 0)
    RETURNING *
), stored AS (
    INSERT INTO {schema}.jobs_done (
        id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token,
        lease_expires_at, worker, last_error, dedup_key, version, created_at, updated_at,
        finished_at, kind, meta, timeout_us, snoozes, errors, output, unique_key, unique_states,
        concurrency_key, workflow_id, blocked_by)
    SELECT m.id, m.queue, m.payload, m.priority, 'dead', m.attempts, m.max_attempts, m.run_at,
           NULL, NULL, m.worker, $3, m.dedup_key, m.version + 1, m.created_at, now(), now(),
           m.kind, m.meta, m.timeout_us, m.snoozes,
           CASE WHEN jsonb_array_length(coalesce(m.errors, '[]')) >= $4
                  THEN coalesce(m.errors, '[]') - 0 ELSE coalesce(m.errors, '[]') END
             || jsonb_build_array(jsonb_build_object(
                    'attempt', m.attempts, 'at', now(), 'error', $3::text, 'worker', m.worker)),
           m.output, m.unique_key, m.unique_states, m.concurrency_key, m.workflow_id, m.blocked_by
    FROM moved m
    RETURNING 1
)
SELECT (SELECT count(*) FROM kept) + (SELECT count(*) FROM stored) AS n
