-- name: job_insert_meta
-- job_insert with the columns most jobs leave NULL: the metadata, timeout and concurrency key of
-- each job (NULL where a job has none), for a batch in which any job has one. One row; the
-- driver repeats the VALUES tuple for multi-row inserts. Binds: id, queue, payload, priority,
-- state, max_attempts, delay, dedup_key, kind, workflow_id, meta, timeout_us, concurrency_key
-- (its UTF-8 bytes).
INSERT INTO {prefix}jobs
    (id, queue, payload, priority, state, attempts, max_attempts, run_at, dedup_key, kind, workflow_id, meta, timeout_us, concurrency_key, version, created_at, updated_at)
VALUES
    (?, ?, ?, ?, ?, 0, ?, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)), ?, ?, ?, ?, ?, ?, 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
