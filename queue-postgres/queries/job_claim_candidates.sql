-- name: job_claim_candidates
-- The optimistic claim's write: claims each candidate ($1 ids, $2 versions) only if it is still
-- pending with the version that was read. A row that another claimer is changing right now is
-- skipped rather than waited for: waiting would lock the row's newest version even when the
-- version check then fails, and two claimers holding such locks can deadlock. A skipped row was
-- being taken by someone else anyway, so the version check still decides every claim.
-- $3: lease in microseconds; $4: worker. Nothing is claimed while the row of queue $5 in
-- `queues` says paused or limited (the read took no lock, so the check is made here).
WITH c AS MATERIALIZED (
    SELECT j.id
    FROM {schema}.jobs j
    JOIN UNNEST($1::uuid[], $2::int8[]) AS v (id, version) ON j.id = v.id
    WHERE j.version = v.version AND j.state = 'pending'
      AND NOT EXISTS (
          SELECT 1 FROM {schema}.queues q
          WHERE q.name = $5 AND (q.paused OR q.concurrency_limit IS NOT NULL))
    ORDER BY j.id
    FOR UPDATE OF j SKIP LOCKED
)
UPDATE {schema}.jobs j
SET state = 'running',
    attempts = j.attempts + 1,
    lease_token = gen_random_uuid(),
    lease_expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond',
    worker = $4,
    version = j.version + 1,
    updated_at = now()
FROM c
WHERE j.id = c.id
RETURNING j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at
