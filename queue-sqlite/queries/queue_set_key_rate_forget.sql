-- name: queue_set_key_rate_forget
-- The second step of queue_set_key_rate: forgets the counts of queue ?1's keys.
DELETE FROM queue_key_rates WHERE queue = ?1
