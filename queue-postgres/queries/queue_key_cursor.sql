-- name: queue_key_cursor
-- Records the key the keyed claim of queue $1 served last ($2; NULL: the jobs without a key),
-- in the claim's transaction, which holds the row's lock.
UPDATE {schema}.queues SET key_cursor = $2 WHERE name = $1
