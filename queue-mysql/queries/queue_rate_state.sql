-- name: queue_rate_state
-- The rate window and count of a queue (its row is locked by this transaction's
-- queue_control_lock), with the server's clock in microseconds since the Unix epoch: the
-- UTC_TIMESTAMP(6) the claim's leases are given out from, counted without a time zone.
SELECT rate_window, rate_count,
       TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us
FROM {prefix}queues WHERE name = ?
