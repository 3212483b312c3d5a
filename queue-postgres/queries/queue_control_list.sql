-- name: queue_control_list
-- Every queue's controls, by name.
SELECT name, paused, concurrency_limit, rate_limit, rate_period_us FROM {schema}.queues ORDER BY name
