-- :n pending jobs in each table (ids in time order, like the queue's UUIDv7, or the expression
-- :id of i), then statistics.
TRUNCATE exp.base; TRUNCATE exp.jobs;
INSERT INTO exp.base (payload)
  SELECT '{"n":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'::jsonb FROM generate_series(1, :n) i;
\if :{?id}
\else
  \set id 'lpad(to_hex(i), 32, ''0'')::uuid'
\endif
INSERT INTO exp.jobs (id, queue, payload, max_attempts, run_at)
  SELECT :id, 'q', '{"n":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'::json,
         25, now() - interval '1 second'
  FROM generate_series(1, :n) i;
VACUUM ANALYZE exp.base; VACUUM ANALYZE exp.jobs; CHECKPOINT;
