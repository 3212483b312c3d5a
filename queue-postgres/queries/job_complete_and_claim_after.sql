-- name: job_complete_and_claim_after
-- job_complete_and_claim whose claim continues from the position ($8 priority, $9 run_at, $10
-- id) where the queue's last claim stopped, in the three ranges of job_claim_after (which says
-- why). Values $1..$7 as in job_complete_and_claim.
WITH gone AS (
    DELETE FROM {schema}.jobs j
    USING UNNEST($5::uuid[], $6::uuid[]) AS l (id, token)
    WHERE NOT $7 AND j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
      AND j.output IS NULL AND j.workflow_id IS NULL
      AND (j.unique_key IS NULL OR j.unique_states & 4 = 0)
    RETURNING j.id
), done AS (
    UPDATE {schema}.jobs j
    SET state = 'completed', finished_at = now(), updated_at = now(),
        lease_token = NULL, lease_expires_at = NULL, version = j.version + 1
    FROM UNNEST($5::uuid[], $6::uuid[]) AS l (id, token)
    WHERE j.id = l.id AND j.lease_token = l.token AND j.state = (SELECT 'running')
      AND ($7 OR j.output IS NOT NULL OR j.workflow_id IS NOT NULL
           OR (j.unique_key IS NOT NULL AND j.unique_states & 4 <> 0))
    RETURNING j.id
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
FROM (SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM done) AS completed) AS d
LEFT JOIN claimed ON true
