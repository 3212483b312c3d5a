-- name: job_insert
-- One row per `(...)` tuple: the driver repeats the tuple after VALUES for multi-row inserts.
-- Binds per row: id, queue, payload, priority, max_attempts, run_at, dedup_key, kind, meta,
-- timeout_us, created_at, updated_at, concurrency_key, state ('pending'; 'waiting' for a step of
-- a workflow with dependencies), workflow_id.
INSERT INTO queue_jobs (id, queue, payload, priority, attempts, max_attempts, run_at, dedup_key, kind, meta, timeout_us, version, created_at, updated_at, concurrency_key, state, workflow_id) VALUES
(?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)
