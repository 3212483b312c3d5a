-- name: job_claim_versioned
-- `job_claim` for engine profiles without SKIP LOCKED or per-row volatile functions (the
-- distributed profile), where a queue's controlled claim runs it inside the transaction that
-- holds its `queues` row: reads up to $2 due pending jobs of queue $1 with their versions, and
-- claims each only if it is still pending with that version. Lease tokens are made by the
-- client ($6: at least $2 of them, given out in claim order). $3: lease in microseconds;
-- $4: worker; $5: the caller applied the queue's controls itself (see job_claim). Due-ness and
-- the lease are read from statement_timestamp(), not the transaction's now(): the transaction
-- may have waited for the queue's row before this statement, and the lease is not born spent.
WITH c AS (
    SELECT id, version, row_number() OVER (ORDER BY priority DESC, run_at, id) AS n
    FROM {schema}.jobs
    WHERE queue = $1 AND state = 'pending' AND run_at <= statement_timestamp()
      AND ($5 OR NOT EXISTS (
          SELECT 1 FROM {schema}.queues q
          WHERE q.name = $1 AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
              OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares)))
    ORDER BY priority DESC, run_at, id
    LIMIT $2
)
UPDATE {schema}.jobs j
SET state = 'running',
    attempts = j.attempts + 1,
    lease_token = ($6::uuid[])[c.n],
    lease_expires_at = statement_timestamp() + $3::bigint * interval '1 microsecond',
    worker = $4,
    version = j.version + 1,
    updated_at = now()
FROM c
WHERE j.id = c.id AND j.version = c.version AND j.state = 'pending'
RETURNING j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.workflow_id, j.blocked_by
