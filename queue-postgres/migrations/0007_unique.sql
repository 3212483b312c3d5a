-- Unique jobs: a job pushed with a uniqueness rule carries its key (a SHA-256 of what makes two
-- jobs the same, made by the engine) and the states in which it holds its place, as bits
-- (pending 1, running 2, completed 4, dead 8, cancelled 16). The partial unique index holds a
-- key once among the rows whose state is in their own set, so two pushes that race never both
-- insert, and a job that leaves its states frees the key.
-- The columns are added without a rewrite. The index is built in this transaction (CREATE INDEX
-- CONCURRENTLY cannot run in one): it reads the table once, blocking writes to it meanwhile,
-- and starts empty (no existing row has a key). The lock is waited for at most 10 s. On a
-- large table, an operator may add the columns (the same ALTER) and build the index beforehand
-- with CREATE UNIQUE INDEX CONCURRENTLY and the same definition: this migration then skips them.
SET LOCAL lock_timeout = '10s';
ALTER TABLE {schema}.jobs
    ADD COLUMN IF NOT EXISTS unique_key    bytea,
    ADD COLUMN IF NOT EXISTS unique_states smallint;
CREATE UNIQUE INDEX IF NOT EXISTS jobs_unique_idx ON {schema}.jobs (unique_key)
    WHERE unique_key IS NOT NULL
      AND (unique_states & CASE state WHEN 'pending' THEN 1 WHEN 'running' THEN 2
           WHEN 'completed' THEN 4 WHEN 'dead' THEN 8 ELSE 16 END) <> 0;
