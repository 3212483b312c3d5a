-- name: job_claim_unkeyed
-- job_claim_key for the jobs of queue $1 without a concurrency key. They are not in
-- jobs_key_idx: this walks jobs_claim_idx past the keyed ones, which is why the engine looks
-- for them at most once a second per process while it last found none.
WITH c AS MATERIALIZED (
    SELECT id FROM {schema}.jobs
    WHERE queue = $1 AND state = 'pending' AND concurrency_key IS NULL AND run_at <= now()
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
