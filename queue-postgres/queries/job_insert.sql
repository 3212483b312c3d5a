-- name: JobInsert
-- $6: delay in microseconds from the database's now.
INSERT INTO {schema}.jobs (id, queue, payload, priority, max_attempts, run_at, dedup_key)
VALUES ($1, $2, $3::jsonb, $4, $5, now() + $6::bigint * interval '1 microsecond', $7)
