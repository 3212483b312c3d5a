-- name: job_insert
-- One row; the driver repeats the VALUES tuple for multi-row inserts.
-- run_at = the database's now + a delay in microseconds. Binds: id, queue, payload, priority,
-- state (waiting for a workflow step with dependencies, else pending), max_attempts, delay,
-- dedup_key, kind, workflow_id (NULL for a job pushed alone). For jobs without metadata, a
-- timeout or a concurrency
-- key of their own (most jobs): each bound value costs on both ends, so those columns are left
-- to job_insert_meta, which a batch uses when any of its jobs has one.
INSERT INTO {prefix}jobs
    (id, queue, payload, priority, state, attempts, max_attempts, run_at, dedup_key, kind, workflow_id, version, created_at, updated_at)
VALUES
    (?, ?, ?, ?, ?, 0, ?, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)), ?, ?, ?, 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
