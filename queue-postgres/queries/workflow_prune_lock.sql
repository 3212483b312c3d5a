-- name: workflow_prune_lock
-- Retention, in a transaction of the driver's: up to $4 workflows created more than $1
-- microseconds ago, after ($2, $3) in (created_at, id) order (from the start when NULL), in
-- that order, along workflows_created_idx, locked FOR UPDATE, skipping the rows another
-- transaction holds (a retry or a batch_add of that workflow locks its row: it is looked at in
-- a later round). The cursor is a row comparison that stays an index condition in a generic
-- plan.
SELECT id, created_at FROM {schema}.workflows
WHERE created_at < now() - $1::bigint * interval '1 microsecond'
  AND (created_at, id) > (coalesce($2::timestamptz, '-infinity'::timestamptz),
                          coalesce($3::uuid, '00000000-0000-0000-0000-000000000000'::uuid))
ORDER BY created_at, id
LIMIT $4
FOR UPDATE SKIP LOCKED
