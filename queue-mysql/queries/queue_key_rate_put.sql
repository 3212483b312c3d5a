-- name: queue_key_rate_put
-- Records how many jobs of a key started in a window, inside the keyed claim's transaction.
-- Binds: queue, key (its UTF-8 bytes), window, count.
INSERT INTO {prefix}queue_key_rates (queue, concurrency_key, rate_window, rate_count)
VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE rate_window = VALUES(rate_window), rate_count = VALUES(rate_count)
