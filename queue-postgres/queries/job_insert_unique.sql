-- name: job_insert_unique
-- One job with a unique key ($11, states $12), in one statement: stored unless a job holding
-- the key exists, which the partial unique index jobs_unique_idx decides (the conflict target
-- repeats its predicate); one row back either way: the new job's id with `inserted` true, or
-- the holder's with false. No row: the key was held by a transaction that committed after
-- this statement's snapshot, or was released meanwhile; the engine tries again.
-- Binds: $1 id, $2 queue, $3 payload, $4 priority, $5 max_attempts, $6 delay in microseconds,
-- $7 dedup_key, $8 kind, $9 meta, $10 timeout_us, $11 unique_key, $12 unique_states,
-- $13 concurrency_key.
WITH ins AS (
    INSERT INTO {schema}.jobs (id, queue, payload, priority, max_attempts, run_at, dedup_key,
                               kind, meta, timeout_us, unique_key, unique_states, concurrency_key)
    VALUES ($1, $2, $3::json, $4, $5, now() + $6::bigint * interval '1 microsecond', $7,
            $8, $9::json, $10, $11, $12, $13)
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL
        AND (unique_states & CASE state WHEN 'pending' THEN 1 WHEN 'running' THEN 2
             WHEN 'completed' THEN 4 WHEN 'dead' THEN 8 ELSE 16 END) <> 0
    DO NOTHING
    RETURNING id
)
SELECT id, true AS inserted FROM ins
UNION ALL
SELECT j.id, false FROM {schema}.jobs j
WHERE NOT EXISTS (SELECT 1 FROM ins)
  AND j.unique_key = $11
  AND (j.unique_states & CASE j.state WHEN 'pending' THEN 1 WHEN 'running' THEN 2
       WHEN 'completed' THEN 4 WHEN 'dead' THEN 8 ELSE 16 END) <> 0
