-- name: queue_key_rate_put
-- Records that $4 jobs of key $2 in queue $1 started in window $3, inside the keyed claim's
-- transaction.
INSERT INTO {schema}.queue_key_rates (queue, concurrency_key, rate_window, rate_count)
VALUES ($1, $2, $3, $4)
ON CONFLICT (queue, concurrency_key)
DO UPDATE SET rate_window = EXCLUDED.rate_window, rate_count = EXCLUDED.rate_count
