-- name: maintenance_claim
-- Takes the lease row of task ?1 when its next run is due: its `next_at` moves to the end of
-- the lease (?3), under token ?2. One row changed: taken. Binds: ?1 task, ?2 token, ?3 lease
-- end, ?4 now.
UPDATE queue_maintenance
SET token = ?2, next_at = ?3
WHERE task = ?1 AND next_at <= ?4
