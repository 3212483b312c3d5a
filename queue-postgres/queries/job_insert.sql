-- name: job_insert
-- One row per array element ($6: delays in microseconds from the database's now), plus one
-- wake-up on channel $8 per queue in $9 (none when $9 is empty), in the same statement and so
-- the same transaction: PostgreSQL delivers the notifications at commit, or never on rollback.
WITH ins AS (
    INSERT INTO {schema}.jobs (id, queue, payload, priority, max_attempts, run_at, dedup_key)
    SELECT t.id, t.queue, t.payload::json, t.priority, t.max_attempts,
           now() + t.delay_us * interval '1 microsecond', t.dedup_key
    FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::int4[], $5::int4[], $6::int8[], $7::text[])
        AS t (id, queue, payload, priority, max_attempts, delay_us, dedup_key)
)
SELECT pg_notify($8, q.queue) FROM UNNEST($9::text[]) AS q (queue)
