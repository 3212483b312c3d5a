-- name: queue_rate_record
-- Records that ?3 jobs of queue ?1 started in window ?2 (inside the controlled claim's
-- transaction).
UPDATE queue_queues SET rate_window = ?2, rate_count = ?3 WHERE name = ?1
