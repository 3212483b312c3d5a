-- name: maintenance_claim
-- Takes the lease row of task ?1 when its next run is due, or keeps it when token ?2 holds it
-- already: its `next_at` moves to the end of the lease (?3), under token ?2. One row changed:
-- taken. (Retention takes a new token each round; the gauge sampler keeps one, so it holds the
-- lease for as long as it renews it.) Binds: ?1 task, ?2 token, ?3 lease end, ?4 now.
UPDATE queue_maintenance
SET token = ?2, next_at = ?3
WHERE task = ?1 AND (next_at <= ?4 OR token = ?2)
