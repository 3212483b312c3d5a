-- Retention looks at workflows in order of creation, whatever their ids (a UUID of any
-- version may be a workflow's id), to delete those whose jobs have all finished long enough
-- ago: an index of (created_at, id). The workflows table is small beside the jobs table (one
-- row per workflow); building the index reads it once, under the migration's write lock.
CREATE INDEX IF NOT EXISTS queue_workflows_created ON queue_workflows (created_at, id);
