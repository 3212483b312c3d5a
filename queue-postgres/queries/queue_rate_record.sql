-- name: queue_rate_record
-- Records that $3 jobs of queue $1 started in window $2 (the row is locked by this
-- transaction's queue_control_lock).
UPDATE {schema}.queues SET rate_window = $2, rate_count = $3 WHERE name = $1
