-- name: JobInsertBatch
-- One row per array element; $6 holds delays in microseconds from the database's now.
INSERT INTO {schema}.jobs (id, queue, payload, priority, max_attempts, run_at, dedup_key)
SELECT t.id, t.queue, t.payload::jsonb, t.priority, t.max_attempts,
       now() + t.delay_us * interval '1 microsecond', t.dedup_key
FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::int4[], $5::int4[], $6::int8[], $7::text[])
    AS t (id, queue, payload, priority, max_attempts, delay_us, dedup_key)
