-- name: queue_key_cursor
-- Records the key the keyed claim of queue ?1 served last (?2; NULL: the jobs without a key),
-- inside the claim's transaction.
UPDATE queue_queues SET key_cursor = ?2 WHERE name = ?1
