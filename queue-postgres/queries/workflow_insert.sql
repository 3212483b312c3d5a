-- name: workflow_insert
-- A workflow's row: $1 id, $2 name, $3 open (a batch that takes more jobs until sealed), $4 a
-- batch's callback job; created now. A second insert of the same id fails on workflows_pkey,
-- which classify reports as the workflow id's unique violation.
INSERT INTO {schema}.workflows (id, name, open, callback, created_at)
VALUES ($1, $2, $3, $4, now())
