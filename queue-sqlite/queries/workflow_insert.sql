-- name: workflow_insert
-- A workflow's row. Binds: ?1 id, ?2 name, ?3 open (an open batch), ?4 callback job id, ?5 now.
INSERT INTO queue_workflows (id, name, open, callback, created_at)
VALUES (?1, ?2, ?3, ?4, ?5)
