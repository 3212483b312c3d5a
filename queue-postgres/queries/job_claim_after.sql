-- name: job_claim_after
-- job_claim of a queue with a backlog, continuing from the position ($6 priority, $7 run_at,
-- $8 id) where its last claim stopped, so that the claim does not walk the index entries of the
-- jobs claimed before it: jobs_claim_idx keeps an entry for each of them until vacuum removes
-- it, and while any transaction in the database holds an older snapshot vacuum removes none, so
-- a claim from the head of the queue walked every job claimed since that snapshot began. Three
-- ranges of the index in claim order, each read only while the ones before it left the limit
-- unfilled: a higher priority from the head of the queue (jobs of a higher priority always come
-- first), the same priority after the position, then a lower priority. Values $1..$5 as in
-- job_claim; the controls are checked once (`ok`) and gate each range before it reads a row.
WITH ok AS (
    SELECT $5 OR NOT EXISTS (
        SELECT 1 FROM {schema}.queues q
        WHERE q.name = $1 AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
            OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares)) AS ok
), c AS MATERIALIZED (
    SELECT id FROM (
        SELECT id FROM (
            SELECT id FROM {schema}.jobs
            WHERE queue = $1 AND state = 'pending' AND priority > $6 AND run_at <= now()
              AND (SELECT ok FROM ok)
            ORDER BY priority DESC, run_at, id
            LIMIT $2
            FOR UPDATE SKIP LOCKED
        ) higher
        UNION ALL
        SELECT id FROM (
            SELECT id FROM {schema}.jobs
            WHERE queue = $1 AND state = 'pending' AND priority = $6 AND (run_at, id) > ($7, $8)
              AND run_at <= now() AND (SELECT ok FROM ok)
            ORDER BY priority DESC, run_at, id
            LIMIT $2
            FOR UPDATE SKIP LOCKED
        ) same
        UNION ALL
        SELECT id FROM (
            SELECT id FROM {schema}.jobs
            WHERE queue = $1 AND state = 'pending' AND priority < $6 AND run_at <= now()
              AND (SELECT ok FROM ok)
            ORDER BY priority DESC, run_at, id
            LIMIT $2
            FOR UPDATE SKIP LOCKED
        ) lower
    ) ranges
    LIMIT $2
)
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
