-- name: queue_set_rate
-- Sets (starts per window, window in microseconds) or removes (both NULL) the rate limit of a
-- queue, creating its row when missing; the count starts afresh. Binds: name, limit, period.
INSERT INTO {prefix}queues (name, rate_limit, rate_period_us, updated_at)
VALUES (?, ?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE rate_limit = VALUES(rate_limit), rate_period_us = VALUES(rate_period_us),
    rate_window = NULL, rate_count = 0, updated_at = VALUES(updated_at)
