-- name: job_complete_and_claim
-- job_complete_many of $5 ids / $6 tokens (keep completed jobs: $7) and job_claim of $1..$4 in
-- one statement: a worker acknowledges its last batch and claims the next in one round trip. The
-- completion and the claim touch disjoint rows (running rows with our tokens, pending rows), so
-- they do not interfere. One
-- row per claimed job, each carrying the number completed; with nothing claimed, one row with
-- only that number (and a NULL id). Like job_claim, it claims nothing of a paused or limited
-- queue (the engine then claims through the queue's controls). The completion compares the
-- state with `(SELECT 'running')` for the reason given in job_complete_many, and updates the
-- locked ids as one array for the reason given in job_claim.
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
), c AS MATERIALIZED (
    SELECT id FROM {schema}.jobs
    WHERE queue = $1 AND state = 'pending' AND run_at <= now()
      AND NOT EXISTS (
          SELECT 1 FROM {schema}.queues q
          WHERE q.name = $1 AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
              OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares))
    ORDER BY priority DESC, run_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
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
