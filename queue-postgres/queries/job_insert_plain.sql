-- name: job_insert_plain
-- `job_insert` without wake-ups, for pushes that notify no one (poll-only mode, engines
-- without LISTEN/NOTIFY, coalesced pushes): the same rows, and no call of pg_notify, which
-- CockroachDB and poolers in transaction mode do not have. Binds $1..$10 as job_insert, and
-- $11..$13 as job_insert's $13..$15 (states and workflow ids empty for jobs pushed alone).
INSERT INTO {schema}.jobs (id, queue, payload, priority, max_attempts, run_at, dedup_key, kind, meta, timeout_us, concurrency_key, state, workflow_id)
SELECT t.id, t.queue, t.payload::json, t.priority, t.max_attempts,
       now() + t.delay_us * interval '1 microsecond', t.dedup_key,
       t.kind, t.meta::json, t.timeout_us, t.concurrency_key,
       coalesce(t.state, 'pending'), t.workflow_id
FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::int4[], $5::int4[], $6::int8[], $7::text[],
            $8::text[], $9::text[], $10::int8[], $11::text[], $12::text[], $13::uuid[])
    AS t (id, queue, payload, priority, max_attempts, delay_us, dedup_key, kind, meta, timeout_us,
          concurrency_key, state, workflow_id)
