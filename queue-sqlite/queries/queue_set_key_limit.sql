-- name: queue_set_key_limit
-- Sets (?2 > 0) or removes (?2 NULL) the key limit of queue ?1, creating its row when missing.
-- ?3: now (microseconds).
INSERT INTO queue_queues (name, key_limit, updated_at) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE
SET key_limit = excluded.key_limit, updated_at = excluded.updated_at
