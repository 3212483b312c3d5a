-- name: job_claim
-- Claims up to $2 due pending jobs of queue $1 in one statement. The MATERIALIZED CTE locks at
-- most $2 rows (skipping rows other claimers hold) before the UPDATE touches any; each claimed
-- row gets its own lease token. $3: lease in microseconds, from clock_timestamp() (the time the
-- row is updated, not the statement's start, so no wait shortens it); $4: worker. Nothing is
-- claimed while the queue's row in `queues` says paused or limited, unless $5 (the caller holds
-- that row's lock and applied the controls itself); the check does not depend on the row being
-- claimed, so it is evaluated once per statement.
-- The locked ids are updated as one array (`id = ANY(ARRAY(SELECT id FROM c))`), not joined
-- with c: sessions run this statement with a generic plan (see session_setup), where LIMIT $2 is
-- estimated at a tenth of the pending rows, and for a join that estimate picks a hash join over
-- a sequential scan of the whole table. The array is looked up by primary key. Rows come back in
-- no particular order; the engine sorts a claim into claim order.
WITH c AS MATERIALIZED (
    SELECT id FROM {schema}.jobs
    WHERE queue = $1 AND state = 'pending' AND run_at <= now()
      AND ($5 OR NOT EXISTS (
          SELECT 1 FROM {schema}.queues q
          WHERE q.name = $1 AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
              OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares)))
    ORDER BY priority DESC, run_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
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
