-- name: job_claim_candidates
-- The optimistic claim's write: claims each candidate ($1 ids, $2 versions) only if it is still
-- pending with the version that was read; the lease tokens ($6, one per candidate) are made by
-- the client. It needs nothing but a version check: no SKIP LOCKED, no volatile function per
-- row (Citus refuses them in an UPDATE of a distributed table), no MATERIALIZED, so the same
-- statement runs on PostgreSQL-compatible engines. A row another claimer is changing is waited
-- for and then rechecked against its new version (it fails the check); a deadlock or
-- serialization failure between claimers is retried by the engine.
-- $3: lease in microseconds, from the statement's now(); $4: worker. Nothing is claimed while
-- the row of queue $5 in `queues` says paused or limited (the read took no lock, so the check
-- is made here).
-- The state is compared with `(SELECT 'pending')` so that the plan looks each candidate up by
-- primary key and never scans the partial claim index (see job_complete_many).
UPDATE {schema}.jobs j
SET state = 'running',
    attempts = j.attempts + 1,
    lease_token = v.token,
    lease_expires_at = now() + $3::bigint * interval '1 microsecond',
    worker = $4,
    version = j.version + 1,
    updated_at = now()
FROM UNNEST($1::uuid[], $2::int8[], $6::uuid[]) AS v (id, version, token)
WHERE j.id = v.id AND j.version = v.version AND j.state = (SELECT 'pending')
  AND NOT EXISTS (
      SELECT 1 FROM {schema}.queues q
      WHERE q.name = $5 AND (q.paused OR q.concurrency_limit IS NOT NULL OR q.rate_limit IS NOT NULL
              OR q.key_limit IS NOT NULL OR q.key_rate_limit IS NOT NULL OR q.fair_shares))
RETURNING j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.workflow_id, j.blocked_by
