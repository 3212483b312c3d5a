-- name: job_claim_keys
-- job_claim_key for several concurrency keys at once: up to $5[i] due pending jobs of queue $1
-- with key $4[i], for each i, in one statement (a keyed claim at a key limit of 1 takes one job
-- from each of many keys, and a statement per key was most of its time). Each key's jobs are
-- read as job_claim_key reads them (one range of jobs_key_idx, see there for why a range of one
-- value), under the queue row's lock of the engine's keyed claim. $2: lease in microseconds;
-- $3: worker. Returns each job's key too, so the engine knows which keys were served.
WITH c AS MATERIALIZED (
    SELECT j.id
    FROM unnest($4::text[], $5::bigint[]) AS k (key, n)
    CROSS JOIN LATERAL (
        SELECT id FROM {schema}.jobs
        WHERE queue = $1 AND state = 'pending' AND concurrency_key >= k.key
          AND concurrency_key <= k.key AND run_at <= now()
        ORDER BY concurrency_key, priority DESC, run_at, id
        LIMIT k.n
        FOR UPDATE SKIP LOCKED
    ) j
)
UPDATE {schema}.jobs j
SET state = 'running',
    attempts = j.attempts + 1,
    lease_token = gen_random_uuid(),
    lease_expires_at = clock_timestamp() + $2::bigint * interval '1 microsecond',
    worker = $3,
    version = j.version + 1,
    updated_at = now()
WHERE j.id = ANY(ARRAY(SELECT id FROM c))
RETURNING j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.workflow_id, j.blocked_by, j.concurrency_key
