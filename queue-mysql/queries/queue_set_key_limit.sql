-- name: queue_set_key_limit
-- Sets (> 0) or removes (NULL) the key limit of a queue, creating its row when missing.
-- Binds: name, limit.
INSERT INTO {prefix}queues (name, key_limit, updated_at) VALUES (?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE key_limit = VALUES(key_limit), updated_at = VALUES(updated_at)
