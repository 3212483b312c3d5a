-- name: queue_set_rate
-- Sets ($2 starts per window of $3 microseconds) or removes ($2 and $3 NULL) the rate limit of
-- queue $1, creating its row when missing; the count starts afresh.
INSERT INTO {schema}.queues (name, rate_limit, rate_period_us) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE SET rate_limit = EXCLUDED.rate_limit,
    rate_period_us = EXCLUDED.rate_period_us, rate_window = NULL, rate_count = 0,
    updated_at = now()
