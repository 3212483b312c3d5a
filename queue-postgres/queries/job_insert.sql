-- name: job_insert
-- One row per array element ($6: delays in microseconds from the database's now; $8..$10: kind,
-- meta and timeout in microseconds, $13: concurrency keys; NULL elements where a job has none), plus one
-- wake-up on channel $11 per queue in $12 (none when $12 is empty), in the same statement and so
-- the same transaction: PostgreSQL delivers the notifications at commit, or never on rollback.
-- $14: states, $15: workflow ids (the steps of a workflow: 'waiting' or 'pending', and their
-- workflow). Both are empty for a chunk of jobs pushed alone, which then costs nothing more:
-- UNNEST pads a shorter array with NULLs, read as pending and no workflow.
WITH ins AS (
    INSERT INTO {schema}.jobs (id, queue, payload, priority, max_attempts, run_at, dedup_key, kind, meta, timeout_us, concurrency_key, state, workflow_id)
    SELECT t.id, t.queue, t.payload::json, t.priority, t.max_attempts,
           now() + t.delay_us * interval '1 microsecond', t.dedup_key,
           t.kind, t.meta::json, t.timeout_us, t.concurrency_key,
           coalesce(t.state, 'pending'), t.workflow_id
    FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::int4[], $5::int4[], $6::int8[], $7::text[],
                $8::text[], $9::text[], $10::int8[], $13::text[], $14::text[], $15::uuid[])
        AS t (id, queue, payload, priority, max_attempts, delay_us, dedup_key, kind, meta, timeout_us,
              concurrency_key, state, workflow_id)
)
SELECT pg_notify($11, q.queue) FROM UNNEST($12::text[]) AS q (queue)
