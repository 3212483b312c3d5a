-- name: workflow_prune_lock
-- Retention, in a transaction of the driver's (BEGIN IMMEDIATE: the write lock is the lock):
-- up to ?4 workflows created before ?1, after (?2, ?3) in (created_at, id) order, in that
-- order, along queue_workflows_created. Binds: ?1 created before (microseconds), ?2 and ?3 the
-- previous page's last created_at and id (the least values before the first page), ?4 limit.
SELECT id, created_at FROM queue_workflows
WHERE created_at < ?1 AND (created_at, id) > (?2, ?3)
ORDER BY created_at, id
LIMIT ?4
