-- name: queue_rate_record
-- Records how many jobs of a queue started in a window (the row is locked by this
-- transaction's queue_control_lock). Binds: window, count, name.
UPDATE {prefix}queues SET rate_window = ?, rate_count = ? WHERE name = ?
