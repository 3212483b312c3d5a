-- name: queue_control_get
-- The controls of queue ?1 (no row: running and unlimited).
SELECT name, paused, concurrency_limit, rate_limit, rate_period_us, key_limit, fair_shares, key_cursor, key_rate_limit, key_rate_period_us FROM queue_queues WHERE name = ?1
