-- name: JobInsertNotify
-- JobInsert plus a wake-up on channel $8 with the queue name, in the same statement (and so the
-- same transaction: PostgreSQL delivers it at commit, or never on rollback).
WITH ins AS (
    INSERT INTO {schema}.jobs (id, queue, payload, priority, max_attempts, run_at, dedup_key)
    VALUES ($1, $2, $3::jsonb, $4, $5, now() + $6::bigint * interval '1 microsecond', $7)
    RETURNING queue
)
SELECT pg_notify($8, ins.queue) FROM ins
