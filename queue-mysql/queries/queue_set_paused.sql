-- name: queue_set_paused
-- Pauses (true) or resumes a queue, creating its row when missing. Binds: name, paused.
INSERT INTO {prefix}queues (name, paused, updated_at) VALUES (?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE paused = VALUES(paused), updated_at = VALUES(updated_at)
