-- name: job_insert
-- One row; the driver repeats the VALUES tuple for multi-row inserts.
-- run_at = the database's now + a delay in microseconds. Binds: id, queue, payload, priority,
-- max_attempts, delay, dedup_key, kind, meta, timeout_us.
INSERT INTO {prefix}jobs
    (id, queue, payload, priority, state, attempts, max_attempts, run_at, dedup_key, kind, meta, timeout_us, version, created_at, updated_at)
VALUES
    (?, ?, ?, ?, 'pending', 0, ?, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)), ?, ?, ?, ?, 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
