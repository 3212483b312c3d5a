-- :n pending jobs in each table (ids in time order, like the queue's UUIDv7, or the expression
-- :id of i), then statistics.
TRUNCATE exp.base; TRUNCATE exp.jobs;
-- Tables some variants of postgres_variants.sh add.
SELECT to_regclass('exp.live') IS NOT NULL AS has_live, to_regclass('exp.jobs_done') IS NOT NULL AS has_done \gset
\if :has_live
  TRUNCATE exp.live;
\endif
\if :has_done
  TRUNCATE exp.jobs_done;
\endif
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
VACUUM ANALYZE exp.base; VACUUM ANALYZE exp.jobs;
\if :has_live
  VACUUM ANALYZE exp.live;
\endif
CHECKPOINT;
