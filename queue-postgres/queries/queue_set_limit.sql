-- name: queue_set_limit
-- Sets ($2 > 0) or removes ($2 NULL) the concurrency limit of queue $1, creating its row when
-- missing.
INSERT INTO {schema}.queues (name, concurrency_limit) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET concurrency_limit = EXCLUDED.concurrency_limit, updated_at = now()
