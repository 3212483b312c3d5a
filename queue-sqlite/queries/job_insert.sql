-- name: job_insert
-- One row per `(...)` tuple: the driver repeats the tuple after VALUES for multi-row inserts.
-- Binds per row: id, queue, payload, priority, max_attempts, run_at, dedup_key, created_at,
-- updated_at.
INSERT INTO queue_jobs (id, queue, payload, priority, state, attempts, max_attempts, run_at, dedup_key, version, created_at, updated_at) VALUES
(?, ?, ?, ?, 'pending', 0, ?, ?, ?, 0, ?, ?)
