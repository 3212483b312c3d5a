-- name: queue_set_key_rate_forget
-- The second step of queue_set_key_rate: forgets the counts of a queue's keys. Binds: queue.
DELETE FROM {prefix}queue_key_rates WHERE queue = ?
