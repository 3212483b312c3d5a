-- name: job_insert
-- One row per `(...)` tuple: the driver repeats the tuple after VALUES for multi-row inserts.
-- Binds per row: id, queue, payload, priority, max_attempts, run_at, dedup_key, kind, meta,
-- timeout_us, created_at, updated_at, concurrency_key.
INSERT INTO queue_jobs (id, queue, payload, priority, state, attempts, max_attempts, run_at, dedup_key, kind, meta, timeout_us, version, created_at, updated_at, concurrency_key) VALUES
(?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)
