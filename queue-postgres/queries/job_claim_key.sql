-- name: job_claim_key
-- Claims up to $2 due pending jobs of queue $1 whose concurrency key is $5, in claim order
-- (jobs_key_idx gives them in that order). Runs only in the engine's keyed claim, whose
-- transaction holds the queue row's lock, so no other claim of this queue runs meanwhile;
-- SKIP LOCKED still passes over rows that a cancel or an edit holds. $3: lease in microseconds;
-- $4: worker. As job_claim, the locked ids are updated as one array.
-- The key is matched as a range of one value and the jobs ordered by key first: with `= $5`
-- the planner drops the key from the order (it is constant), and jobs_claim_idx, filtering
-- on the key, gives the same order; on a table without statistics it can cost the same as
-- jobs_key_idx and walk every pending job of the queue's other keys. Ordered by key, only
-- jobs_key_idx needs no sort, and queue_control_lock turned sorts off for this transaction.
WITH c AS MATERIALIZED (
    SELECT id FROM {schema}.jobs
    WHERE queue = $1 AND state = 'pending' AND concurrency_key >= $5 AND concurrency_key <= $5
      AND run_at <= now()
    ORDER BY concurrency_key, priority DESC, run_at, id
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
