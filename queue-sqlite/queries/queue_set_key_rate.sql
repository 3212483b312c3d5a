-- name: queue_set_key_rate
-- Sets (?2 starts per window of ?3 microseconds, per key) or removes (?2 and ?3 NULL) the key
-- rate limit of queue ?1, creating its row when missing. ?4: now (microseconds). The counts of
-- its keys are forgotten by queue_set_key_rate_forget, in the same transaction.
INSERT INTO queue_queues (name, key_rate_limit, key_rate_period_us, updated_at)
VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (name) DO UPDATE
SET key_rate_limit = excluded.key_rate_limit, key_rate_period_us = excluded.key_rate_period_us,
    updated_at = excluded.updated_at
