-- name: queue_key_rate_get
-- The window of key ?2's count of starts in queue ?1 and that count (no row: none recorded),
-- inside the keyed claim's transaction.
SELECT rate_window, rate_count FROM queue_key_rates WHERE queue = ?1 AND concurrency_key = ?2
