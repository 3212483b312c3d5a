-- name: queue_set_fair
-- Turns fair shares of queue ?1 on or off (?2), creating its row when missing. ?3: now
-- (microseconds).
INSERT INTO queue_queues (name, fair_shares, updated_at) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE
SET fair_shares = excluded.fair_shares, updated_at = excluded.updated_at
