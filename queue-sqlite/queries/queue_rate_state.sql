-- name: queue_rate_state
-- The rate window and count of queue ?1, read inside the controlled claim's transaction (under
-- the write lock), with SQLite's clock in microseconds: the clock the claim's leases are given
-- out by.
SELECT rate_window, rate_count,
       CAST(unixepoch('subsec') * 1000000 AS INTEGER) AS now_us
FROM queue_queues WHERE name = ?1
