-- name: queue_set_fair
-- Turns fair shares of a queue on (true) or off, creating its row when missing.
-- Binds: name, on.
INSERT INTO {prefix}queues (name, fair_shares, updated_at) VALUES (?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE fair_shares = VALUES(fair_shares), updated_at = VALUES(updated_at)
