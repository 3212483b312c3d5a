-- name: queue_key_cursor
-- Records the key the keyed claim of a queue served last (NULL: the jobs without a key), in the
-- claim's transaction, which holds the row's lock (queue_control_lock). Binds: key (its UTF-8
-- bytes), name.
UPDATE {prefix}queues SET key_cursor = ? WHERE name = ?
