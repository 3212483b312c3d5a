-- Retention looks at workflows in order of creation, whatever their ids (a UUID of any
-- version may be a workflow's id), to delete those whose jobs have all finished long enough
-- ago: an index `created` over (created_at, id) of the workflows table (small beside the jobs
-- table: one row per workflow). Built in place, reads and writes go on meanwhile; a rerun is
-- refused with "duplicate key name" (1061), which the migrator takes as applied.
ALTER TABLE {prefix}workflows ADD INDEX created (created_at, id)
