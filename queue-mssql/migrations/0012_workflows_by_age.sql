-- Retention looks at workflows in order of creation, whatever their ids (a UUID of any
-- version may be a workflow's id), to delete those whose jobs have all finished long enough
-- ago: workflows_created_idx over (created_at, id). The workflows table is small beside the
-- jobs table (one row per workflow); building the index reads it once and blocks its writes
-- meanwhile (new workflows, batch_add, seals); the jobs table is not touched. Guarded
-- (sys.indexes), as migration 0005's steps are: a rerun finds it made and goes on.
IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'[{schema}].[workflows]')
                 AND name = N'workflows_created_idx')
    CREATE INDEX workflows_created_idx ON [{schema}].[workflows] (created_at, id);
