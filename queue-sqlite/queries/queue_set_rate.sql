-- name: queue_set_rate
-- Sets (?2 starts per window of ?3 microseconds) or removes (?2 and ?3 NULL) the rate limit of
-- queue ?1, creating its row when missing; the count starts afresh. ?4: now (microseconds).
INSERT INTO queue_queues (name, rate_limit, rate_period_us, updated_at) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (name) DO UPDATE
SET rate_limit = excluded.rate_limit, rate_period_us = excluded.rate_period_us,
    rate_window = NULL, rate_count = 0, updated_at = excluded.updated_at
