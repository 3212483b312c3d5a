-- name: job_insert_copy
-- job_insert for a large batch of jobs due now: one COPY in binary format (no per-row
-- expressions; run_at, created_at and updated_at take their default, the database's now).
-- The driver sends the rows, in column order, and the wake-ups after it with `notify`.
-- Only jobs pushed alone: their state and workflow take the defaults too (pending, none);
-- a batch with steps of a workflow uses job_insert_copy_workflow.
COPY {schema}.jobs (id, queue, payload, priority, max_attempts, dedup_key, kind, meta, timeout_us, concurrency_key) FROM STDIN (FORMAT binary)
