-- name: queue_set_fair
-- Turns fair shares of queue $1 on or off ($2), creating its row when missing.
INSERT INTO {schema}.queues (name, fair_shares) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET fair_shares = EXCLUDED.fair_shares, updated_at = now()
