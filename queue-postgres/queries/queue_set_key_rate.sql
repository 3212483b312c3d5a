-- name: queue_set_key_rate
-- Sets ($2 starts per window of $3 microseconds, per key) or removes ($2 and $3 NULL) the key
-- rate limit of queue $1, creating its row when missing, and forgets the counts of its keys.
WITH forgotten AS (
    DELETE FROM {schema}.queue_key_rates WHERE queue = $1
)
INSERT INTO {schema}.queues (name, key_rate_limit, key_rate_period_us) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE SET key_rate_limit = EXCLUDED.key_rate_limit,
    key_rate_period_us = EXCLUDED.key_rate_period_us, updated_at = now()
