-- name: queue_set_key_rate
-- Sets (starts per window, window in microseconds, per key) or removes (both NULL) the key
-- rate limit of a queue, creating its row when missing. The counts of its keys are forgotten
-- by queue_set_key_rate_forget in the same transaction. Binds: name, limit, period.
INSERT INTO {prefix}queues (name, key_rate_limit, key_rate_period_us, updated_at)
VALUES (?, ?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE key_rate_limit = VALUES(key_rate_limit),
    key_rate_period_us = VALUES(key_rate_period_us), updated_at = VALUES(updated_at)
