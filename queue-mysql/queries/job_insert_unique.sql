-- name: job_insert_unique
-- One job with a unique key and its states: stored unless a job holding the key exists, which
-- the unique index unique_live decides (it fails with 1062, and job_insert_unique_holder reads
-- who holds the key). Binds: id, queue, payload, priority, max_attempts, delay, dedup_key,
-- kind, meta, timeout_us, unique_key, unique_states, concurrency_key (its UTF-8 bytes).
INSERT INTO {prefix}jobs
    (id, queue, payload, priority, state, attempts, max_attempts, run_at, dedup_key, kind, meta, timeout_us, unique_key, unique_states, concurrency_key, version, created_at, updated_at)
VALUES
    (?, ?, ?, ?, 'pending', 0, ?, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)), ?, ?, ?, ?, ?, ?, ?, 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
