-- name: queue_control_get
-- The controls of queue ?1 (no row: running and unlimited).
SELECT name, paused, concurrency_limit FROM queue_queues WHERE name = ?1
