-- name: queue_set_limit
-- Sets (> 0) or removes (NULL) the concurrency limit of a queue, creating its row when missing.
-- Binds: name, limit.
INSERT INTO {prefix}queues (name, concurrency_limit, updated_at) VALUES (?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE concurrency_limit = VALUES(concurrency_limit), updated_at = VALUES(updated_at)
