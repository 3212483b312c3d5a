-- name: job_complete_and_claim_after_move
-- job_complete_and_claim_after when finished jobs are partitioned (values as there).
-- The same with finished partitions: a job that is kept and needs its row in jobs (a step of
-- a workflow, whose jobs go together; a uniqueness over the completed state, which
-- jobs_unique_idx holds) is completed in place, as in job_complete_and_claim_after; any other kept job moves to
-- jobs_done (its state's partition for this finish time) in the same statement. The three
-- branches take disjoint rows.
WITH gone AS (
    DELETE FROM {schema}.jobs j
    USING UNNEST($5::uuid[], $6::uuid[]) AS l (id, token)
    WHERE NOT $7 AND j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
      AND j.output IS NULL AND j.workflow_id IS NULL
      AND (j.unique_key IS NULL OR j.unique_states & 4 = 0)
    RETURNING j.id
), kept AS (
    UPDATE {schema}.jobs j
    SET state = 'completed', finished_at = now(), updated_at = now(),
        lease_token = NULL, lease_expires_at = NULL, version = j.version + 1
    FROM UNNEST($5::uuid[], $6::uuid[]) AS l (id, token)
    WHERE j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
      AND (j.workflow_id IS NOT NULL OR (j.unique_key IS NOT NULL AND j.unique_states & 4 <> 0))
    RETURNING j.id
), moved AS (
    DELETE FROM {schema}.jobs j
    USING UNNEST($5::uuid[], $6::uuid[]) AS l (id, token)
    WHERE j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
      AND ($7 OR j.output IS NOT NULL) AND j.workflow_id IS NULL
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
), ok AS (
    SELECT NOT EXISTS (
        SELECT 1 FROM {schema}.queues q
        WHERE q.name = $1 AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
            OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares)) AS ok
), c AS MATERIALIZED (
    SELECT id FROM (
        SELECT id FROM (
            SELECT id FROM {schema}.jobs
            WHERE queue = $1 AND state = 'pending' AND priority > $8 AND run_at <= now()
              AND (SELECT ok FROM ok)
            ORDER BY priority DESC, run_at, id
            LIMIT $2
            FOR UPDATE SKIP LOCKED
        ) higher
        UNION ALL
        SELECT id FROM (
            SELECT id FROM {schema}.jobs
            WHERE queue = $1 AND state = 'pending' AND priority = $8 AND (run_at, id) > ($9, $10)
              AND run_at <= now() AND (SELECT ok FROM ok)
            ORDER BY priority DESC, run_at, id
            LIMIT $2
            FOR UPDATE SKIP LOCKED
        ) same
        UNION ALL
        SELECT id FROM (
            SELECT id FROM {schema}.jobs
            WHERE queue = $1 AND state = 'pending' AND priority < $8 AND run_at <= now()
              AND (SELECT ok FROM ok)
            ORDER BY priority DESC, run_at, id
            LIMIT $2
            FOR UPDATE SKIP LOCKED
        ) lower
    ) ranges
    LIMIT $2
), claimed AS (
    UPDATE {schema}.jobs j
    SET state = 'running',
        attempts = j.attempts + 1,
        lease_token = gen_random_uuid(),
        lease_expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond',
        worker = $4,
        version = j.version + 1,
        updated_at = now()
    WHERE j.id = ANY(ARRAY(SELECT id FROM c))
    RETURNING j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.workflow_id, j.blocked_by
)
SELECT d.completed, claimed.*
FROM (SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM kept) + (SELECT count(*) FROM stored) AS completed) AS d
LEFT JOIN claimed ON true
