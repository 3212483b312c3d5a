-- name: queue_control_list
-- Every queue's controls, by name.
SELECT name, paused, concurrency_limit, rate_limit, rate_period_us, key_limit, fair_shares, key_cursor, key_rate_limit, key_rate_period_us FROM queue_queues ORDER BY name
