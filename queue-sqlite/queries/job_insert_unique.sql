-- name: job_insert_unique
-- One job with a unique key: stored unless a job holding the key (in its own states) exists,
-- which the partial unique index queue_jobs_unique decides (the conflict target repeats its
-- predicate). Returns the id when stored; nothing when the key was held (then
-- job_insert_unique_holder reads who holds it). Binds: ?1 id, ?2 queue, ?3 payload,
-- ?4 priority, ?5 max_attempts, ?6 run_at, ?7 dedup_key, ?8 kind, ?9 meta, ?10 timeout_us,
-- ?11 now, ?12 unique_key, ?13 unique_states, ?14 concurrency_key.
INSERT INTO queue_jobs (id, queue, payload, priority, state, attempts, max_attempts, run_at, dedup_key, kind, meta, timeout_us, unique_key, unique_states, version, created_at, updated_at, concurrency_key)
VALUES (?1, ?2, ?3, ?4, 'pending', 0, ?5, ?6, ?7, ?8, ?9, ?10, ?12, ?13, 0, ?11, ?11, ?14)
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL
    AND (unique_states & CASE state WHEN 'pending' THEN 1 WHEN 'running' THEN 2
         WHEN 'completed' THEN 4 WHEN 'dead' THEN 8 ELSE 16 END) <> 0
DO NOTHING
RETURNING id
