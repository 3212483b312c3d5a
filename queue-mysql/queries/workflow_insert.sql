-- name: workflow_insert
-- A workflow's row, created_at the database's now. A second insert of the same id fails with
-- a duplicate entry (1062) on the primary key, the table's only unique index. Binds: id, name,
-- open, callback.
INSERT INTO {prefix}workflows (id, name, open, callback, created_at)
VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))
