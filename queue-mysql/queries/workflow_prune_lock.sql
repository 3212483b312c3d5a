-- name: workflow_prune_lock
-- Retention, in a transaction of the driver's (READ COMMITTED): up to LIMIT workflows created
-- more than the given microseconds ago, after the cursor (created_at, id) of the previous page,
-- in that order, along `created`, locked (FOR UPDATE), skipping rows other transactions hold
-- (SKIP LOCKED: a retry or a batch_add of that workflow locks its row; it is looked at in a
-- later round). A server without SKIP LOCKED runs it with `FOR UPDATE` alone, waiting for
-- them. Binds: the age, the cursor's created_at twice and id, the limit.
SELECT id, created_at FROM {prefix}workflows FORCE INDEX (created)
WHERE created_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6))
  AND (created_at > ? OR (created_at = ? AND id > ?))
ORDER BY created_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
