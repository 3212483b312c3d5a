-- name: JobInsert
-- One row per `(...)` tuple; push_batch repeats the tuple after VALUES for multi-row inserts.
-- Binds: id, queue, payload, priority, max_attempts, run_at, dedup_key, created_at, updated_at.
INSERT INTO queue_jobs (id, queue, payload, priority, state, attempts, max_attempts, run_at, dedup_key, version, created_at, updated_at) VALUES
(?, ?, ?, ?, 'pending', 0, ?, ?, ?, 0, ?, ?)
