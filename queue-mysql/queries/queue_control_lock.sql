-- name: queue_control_lock
-- The controls of a queue, locked until the controlled claim's transaction ends: controlled
-- claims of one queue take turns, and each one's count of live leases (a later statement, so a
-- fresh read view under READ COMMITTED) sees every claim committed before it got the lock.
SELECT name, paused, concurrency_limit, rate_limit, rate_period_us, key_limit, fair_shares, key_cursor, key_rate_limit, key_rate_period_us FROM {prefix}queues WHERE name = ? FOR UPDATE
