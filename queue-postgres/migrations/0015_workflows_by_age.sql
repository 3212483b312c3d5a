-- Retention looks at workflows in order of creation, whatever their ids (a UUID of any
-- version may be a workflow's id), to delete those whose jobs have all finished long enough
-- ago: workflows_created_idx over (created_at, id). The workflows table is small beside the
-- jobs table (one row per workflow); the index is built in this transaction, which reads the
-- table once and blocks its writes (new workflows, batch_add, seals) meanwhile; the jobs table
-- is not touched. The lock is waited for at most 10 s; a migration that times out changes
-- nothing. An operator may build the index beforehand with CREATE INDEX CONCURRENTLY and the
-- same definition: this migration then finds it.
SET LOCAL lock_timeout = '10s';
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index
               WHERE indexrelid = to_regclass('{schema}.workflows_created_idx')
                 AND NOT indisvalid) THEN
        DROP INDEX {schema}.workflows_created_idx;
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS workflows_created_idx ON {schema}.workflows (created_at, id);
