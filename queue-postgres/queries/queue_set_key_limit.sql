-- name: queue_set_key_limit
-- Sets ($2) or removes ($2 NULL) the key limit of queue $1, creating its row when missing.
INSERT INTO {schema}.queues (name, key_limit) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET key_limit = EXCLUDED.key_limit, updated_at = now()
