-- name: queue_control_list
-- Every queue's controls, by name (binary order, as the column's collation compares).
SELECT name, paused, concurrency_limit, rate_limit, rate_period_us
FROM [{schema}].[queues]
ORDER BY name
