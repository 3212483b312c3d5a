-- Setup of the table-cost experiment on PostgreSQL (postgres.sh): the same hand-written claim and
-- completion on two tables, the baseline's and the queue's. Drops and recreates schema `exp`.
DROP SCHEMA IF EXISTS exp CASCADE;
CREATE SCHEMA exp;
-- The bench's baseline table (queue-bench/src/pg.rs).
CREATE TABLE exp.base (id bigserial PRIMARY KEY, payload jsonb NOT NULL, state text NOT NULL DEFAULT 'pending', attempts int NOT NULL DEFAULT 0);
CREATE INDEX base_pending ON exp.base (id) WHERE state = 'pending';
-- The queue's jobs table as queue-postgres/migrations/0001 to 0013 leave it (columns in the order
-- the migrations add them; every index, partial ones included). Migration 14 merged the two
-- indexes of finished jobs into one: that table is the variant merged-finished-index of
-- postgres_variants.sh, whose other variants are measured against this one.
CREATE TABLE exp.jobs (
    id uuid PRIMARY KEY, queue text NOT NULL, payload json NOT NULL, priority integer NOT NULL DEFAULT 0,
    state text NOT NULL DEFAULT 'pending'
        CHECK (state IN ('waiting','pending','running','completed','dead','cancelled')),
    attempts integer NOT NULL DEFAULT 0, max_attempts integer NOT NULL, run_at timestamptz NOT NULL DEFAULT now(),
    lease_token uuid, lease_expires_at timestamptz, worker text, last_error text, dedup_key text,
    version bigint NOT NULL DEFAULT 0, created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz,
    kind text, meta json, timeout_us bigint, snoozes integer NOT NULL DEFAULT 0, errors jsonb, output json,
    unique_key bytea, unique_states smallint, concurrency_key text COLLATE "C", workflow_id uuid, blocked_by uuid
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
CREATE INDEX jobs_claim_idx ON exp.jobs (queue, priority DESC, run_at, id) WHERE state = 'pending';
CREATE INDEX jobs_lease_idx ON exp.jobs (lease_expires_at) WHERE state = 'running';
CREATE UNIQUE INDEX jobs_dedup_idx ON exp.jobs (queue, dedup_key) WHERE dedup_key IS NOT NULL AND state IN ('pending','running');
CREATE INDEX jobs_finished_idx ON exp.jobs (finished_at) WHERE state IN ('completed','dead','cancelled');
CREATE UNIQUE INDEX jobs_unique_idx ON exp.jobs (unique_key)
    WHERE unique_key IS NOT NULL
      AND (unique_states & CASE state WHEN 'pending' THEN 1 WHEN 'running' THEN 2
           WHEN 'completed' THEN 4 WHEN 'dead' THEN 8 ELSE 16 END) <> 0;
CREATE INDEX jobs_finished_queue_idx ON exp.jobs (queue, state) WHERE state IN ('completed','dead','cancelled');
CREATE INDEX jobs_key_idx ON exp.jobs (queue, concurrency_key, priority DESC, run_at, id)
    WHERE state = 'pending' AND concurrency_key IS NOT NULL;
CREATE INDEX jobs_waiting_idx ON exp.jobs (id) WHERE state = 'waiting';

-- The baseline's cycle: claim n with the bench's statement, commit, mark them done, commit.
CREATE PROCEDURE exp.base_cycle(n int) LANGUAGE plpgsql AS $$
DECLARE ids bigint[];
BEGIN
  WITH c AS (SELECT id FROM exp.base WHERE state = 'pending' ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED),
       u AS (UPDATE exp.base t SET state = 'running', attempts = t.attempts + 1 FROM c WHERE t.id = c.id RETURNING t.id)
  SELECT array_agg(id) INTO ids FROM u;
  COMMIT;
  UPDATE exp.base SET state = 'done' WHERE id = ANY(ids);
  COMMIT;
END $$;

-- The same two transactions on the jobs table, writing the columns the queue's claim and
-- completion write (lease token and expiry, worker, attempts, version, timestamps).
CREATE PROCEDURE exp.jobs_cycle(n int) LANGUAGE plpgsql AS $$
DECLARE ids uuid[]; toks uuid[];
BEGIN
  WITH c AS MATERIALIZED (SELECT id FROM exp.jobs WHERE queue = 'q' AND state = 'pending' AND run_at <= now()
                          ORDER BY priority DESC, run_at, id LIMIT n FOR UPDATE SKIP LOCKED),
       u AS (UPDATE exp.jobs j SET state = 'running', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
                lease_expires_at = clock_timestamp() + interval '30 seconds', worker = 'w', version = j.version + 1,
                updated_at = now() FROM c WHERE j.id = c.id RETURNING j.id, j.lease_token)
  SELECT array_agg(id), array_agg(lease_token) INTO ids, toks FROM u;
  COMMIT;
  UPDATE exp.jobs j SET state = 'completed', lease_token = NULL, lease_expires_at = NULL, finished_at = now(),
         updated_at = now(), version = j.version + 1
  FROM UNNEST(ids, toks) AS a(id, tok) WHERE j.id = a.id AND j.lease_token = a.tok AND j.state = (SELECT 'running');
  COMMIT;
END $$;

CREATE SEQUENCE exp.ids CACHE 1000;
