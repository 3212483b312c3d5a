-- name: queue_control_lock
-- The controls of queue ?1, read inside the controlled claim's BEGIN IMMEDIATE transaction,
-- whose write lock is the lock: nobody else claims until it ends.
SELECT name, paused, concurrency_limit, rate_limit, rate_period_us, key_limit, fair_shares, key_cursor, key_rate_limit, key_rate_period_us FROM queue_queues WHERE name = ?1
