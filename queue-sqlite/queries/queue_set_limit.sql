-- name: queue_set_limit
-- Sets (?2 > 0) or removes (?2 NULL) the concurrency limit of queue ?1, creating its row when
-- missing. ?3: now (microseconds).
INSERT INTO queue_queues (name, concurrency_limit, updated_at) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE
SET concurrency_limit = excluded.concurrency_limit, updated_at = excluded.updated_at
